// Helpers shared by the GoogleTest suites.
#ifndef SHARDLOADER_TESTS_CPP_TEST_UTIL_H_
#define SHARDLOADER_TESTS_CPP_TEST_UTIL_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "shardloader/io/byte_source.h"

namespace shardloader::testing {

// A fresh directory under the system's temporary directory, removed with
// everything in it when the object goes away.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "shardloader-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

// Root of the shared real data (../shared/data beside the repository).
// Reads `size` bytes from `source`; fewer if the stream ends first.
// Errors: the source's.
inline absl::StatusOr<std::string> ReadBytes(ByteSource& source, size_t size) {
  std::string bytes(size, '\0');
  size_t done = 0;
  while (done < size) {
    absl::StatusOr<size_t> n = source.Read(bytes.data() + done, size - done);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    done += *n;
  }
  bytes.resize(done);
  return bytes;
}

inline std::string SharedDataDir() { return SHARDLOADER_SHARED_DATA_DIR; }

}  // namespace shardloader::testing

#endif  // SHARDLOADER_TESTS_CPP_TEST_UTIL_H_
