// File.cpp - whole-file reads and checked atomic writes (see File.h), on POSIX calls so that
// every failure can report errno.
#include "support/File.h"

#include "support/Error.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace npuc {

namespace {

std::string why() {
  return std::strerror(errno);
}

// What a non-regular file is, for "refusing to replace a FIFO".
const char *fileKind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

// Closes `fd` on every path out of a scope.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

// Opens `path` for reading and stats it (readFile, MappedFile); errors name the file and the
// system's reason.
int openForReading(const std::string &path, struct stat &st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail("{}: cannot open file: {}", path, why());
  if (::fstat(fd, &st) != 0) {
    const std::string reason = why();
    ::close(fd);
    fail("{}: cannot read file: {}", path, reason);
  }
  return fd;
}

// The rest of an open file, straight into the string (a package is ~100 MB: no bounce buffer); a
// file that grows while we read it, or one whose size stat does not know (a pipe), continues in
// blocks. A directory is refused, naming it.
std::string readOpen(const Fd &f, const struct stat &st, const std::string &path) {
  if (S_ISDIR(st.st_mode))
    fail("{}: is a directory, not a file", path);
  std::string out(S_ISREG(st.st_mode) ? size_t(st.st_size) : size_t(0), '\0');
  size_t have = 0;
  for (;;) {
    if (have == out.size())
      out.resize(have + (size_t(1) << 16));
    ssize_t n = ::read(f.fd, out.data() + have, out.size() - have);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      fail("{}: cannot read file: {}", path, why());
    if (n == 0)
      break;
    have += size_t(n);
  }
  out.resize(have);
  return out;
}

} // namespace

std::string readFile(const std::string &path) {
  struct stat st {};
  Fd f{openForReading(path, st)};
  return readOpen(f, st, path);
}

MappedFile::MappedFile(const std::string &path) {
  struct stat st {};
  Fd f{openForReading(path, st)};
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    void *p = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, f.fd, 0);
    if (p != MAP_FAILED) {
      map_ = p;
      mapBytes_ = size_t(st.st_size);
      view_ = std::string_view(static_cast<const char *>(p), mapBytes_);
      return;
    }
  }
  // Empty, not mappable, or not a regular file: read from this descriptor (a FIFO's writer is
  // paired with this open, not with a second one).
  read_ = readOpen(f, st, path);
  view_ = read_;
}

MappedFile::~MappedFile() {
  if (map_)
    ::munmap(map_, mapBytes_);
}

std::string checkOutputPath(const std::string &path, const std::vector<std::string> &inputs) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return path; // a new file; its directory's problems show when it is created
    fail("{}: cannot write file: {}", path, why());
  }
  std::string dest = path;
  if (S_ISLNK(st.st_mode)) {
    // Replace the file the link names, not the link: renaming over the link would turn it into
    // a plain file and leave its target stale.
    char buf[PATH_MAX];
    if (!::realpath(path.c_str(), buf))
      fail("{}: cannot write through the symbolic link: {}", path, why());
    dest = buf;
    if (::stat(dest.c_str(), &st) != 0)
      fail("{}: cannot write file: {}", path, why());
  }
  if (!S_ISREG(st.st_mode))
    fail("{}: is {}; refusing to replace it with an output (name a regular file)", path,
         fileKind(st.st_mode));
  for (const std::string &in : inputs) {
    struct stat is {};
    if (!in.empty() && ::stat(in.c_str(), &is) == 0 && is.st_dev == st.st_dev &&
        is.st_ino == st.st_ino)
      fail("{}: is an input of this command ({}); refusing to overwrite it", path, in);
  }
  return dest;
}

void writeFileAtomic(const std::string &path, const std::string &bytes,
                     const std::vector<std::string> &inputs) {
  const std::string dest = checkOutputPath(path, inputs);
  // O_EXCL: never write into a file someone else created under our temporary name.
  std::string tmp;
  int fd = -1;
  for (int i = 0; fd < 0; ++i) {
    tmp = dest + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(i);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || i == 100))
      fail("{}: cannot write file: {}", path, why());
  }
  auto abandon = [&](const std::string &reason) {
    ::close(fd);
    ::unlink(tmp.c_str());
    fail("{}: cannot write file: {}", path, reason);
  };
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      abandon(why());
    done += size_t(n);
  }
  if (::close(fd) != 0) {
    const std::string reason = why();
    ::unlink(tmp.c_str());
    fail("{}: cannot write file: {}", path, reason);
  }
  if (::rename(tmp.c_str(), dest.c_str()) != 0) {
    const std::string reason = why();
    ::unlink(tmp.c_str());
    fail("{}: cannot write file: {}", path, reason);
  }
}

void replaceWithTemp(const std::string &tmp, const std::string &path,
                     const std::vector<std::string> &inputs) {
  std::string dest;
  try {
    dest = checkOutputPath(path, inputs);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), dest.c_str()) != 0) {
    const std::string reason = why();
    ::unlink(tmp.c_str());
    fail("{}: cannot write file: {}", path, reason);
  }
}

std::string sanitizeName(const std::string &name) {
  std::string out = name;
  for (char &c : out) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok)
      c = '_';
  }
  return out.empty() ? "_" : out;
}

} // namespace npuc
