// Fuzz target: TarReader over arbitrary bytes (ustar, GNU long names and
// sparse headers, PAX local and global records, base-256 sizes).
//
// Walks the archive to its end or first error, reading the data of every
// other member (so both ReadData and the skip path run), and checks the
// first block with IsHeaderOfSize. Errors are fine; crashes, leaks, hangs
// and sanitizer reports are not.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "shardloader/format/tar_reader.h"
#include "shardloader/io/memory_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  if (bytes.size() >= 512) {
    (void)shardloader::IsHeaderOfSize(bytes.data(), 0);
    (void)shardloader::IsHeaderOfSize(bytes.data(), static_cast<int64_t>(size) - 1024);
  }
  shardloader::MemorySource source("fuzz.tar", bytes);
  shardloader::TarReader reader(&source);
  std::string member_data;
  for (int i = 0; i < 100000; ++i) {
    absl::StatusOr<std::optional<shardloader::TarMember>> member = reader.Next();
    if (!member.ok() || !member->has_value()) break;
    if (i % 2 == 0 && !reader.ReadData(&member_data).ok()) break;
  }
  return 0;
}
