// Pareto.h - the non-dominated subset of a set of points under several objectives.
#pragma once

#include <cstddef>
#include <vector>

namespace npuc::explore {

/// Whether a dominates b: a is <= b in every objective and < in one (all minimised).
bool dominates(const std::vector<double> &a, const std::vector<double> &b);

/// Indices (ascending) of the points no other point dominates. Every objective is minimised (a
/// maximised one is passed negated). a dominates b when a is <= b in every objective and < in
/// one; equal points do not dominate each other, so duplicates are all on the front.
/// Every point must have the same number of objectives.
std::vector<size_t> paretoFront(const std::vector<std::vector<double>> &points);

} // namespace npuc::explore
