// Expected.h - a value or the reason there is none, for results that may legitimately fail.
//
// The compiler's decisions (a group does not fit, a kernel cannot encode a field) are ordinary
// results, not exceptions: functions that make them return Expected<T, E>, and the caller decides
// what the failure means (try the next strategy, split the group, run it on the CPU). npuc::Error
// stays for bad input only. The shape follows C++23's std::expected (and LLVM's Expected), so
// that moving to the standard type later is a rename: `if (!r) return unexpected(r.error());`.
#pragma once

#include "support/Error.h"

#include <utility>
#include <variant>

namespace npuc {

/// The failure side of an Expected, wrapped so that T and E may be the same type.
template <typename E> struct Unexpected {
  E error;
};
template <typename E> Unexpected<std::decay_t<E>> unexpected(E &&e) {
  return {std::forward<E>(e)};
}

template <typename T, typename E> class [[nodiscard]] Expected {
public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  template <typename U> Expected(Unexpected<U> e) : v_(std::in_place_index<1>, std::move(e.error)) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T &value() & {
    NPUC_ASSERT(has_value(), "Expected::value() on a failure: check has_value() first");
    return std::get<0>(v_);
  }
  const T &value() const & {
    NPUC_ASSERT(has_value(), "Expected::value() on a failure: check has_value() first");
    return std::get<0>(v_);
  }
  T &&value() && {
    NPUC_ASSERT(has_value(), "Expected::value() on a failure: check has_value() first");
    return std::get<0>(std::move(v_));
  }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  const E &error() const & {
    NPUC_ASSERT(!has_value(), "Expected::error() on a value: check has_value() first");
    return std::get<1>(v_);
  }
  E &&error() && {
    NPUC_ASSERT(!has_value(), "Expected::error() on a value: check has_value() first");
    return std::get<1>(std::move(v_));
  }

private:
  std::variant<T, E> v_;
};

} // namespace npuc
