// Fuzz target: shard specs (plan/shard_list): a packed folder's index.json
// and brace patterns.
//
// The input is written as index.json into a scratch folder that holds two
// shards, then resolved three ways: as a named index ("DIR/index.json"), as
// the folder (which reads its index.json, or lists *.tar when the file is
// not a shardloader index), and as a brace pattern (the input's first line).
// Every outcome must be a list or an error; the shards of a folder must be
// what its index lists, so nothing a malformed index says is trusted.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "shardloader/plan/shard_list.h"

namespace {

// The scratch folder: two empty shards and the index under test.
const std::string& Folder() {
  static const std::string* folder = [] {
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("shard-list-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    for (const char* name : {"a-000000.tar", "a-000001.tar"}) {
      std::ofstream(path / name).put('\0');
    }
    return new std::string(path.string());
  }();
  return *folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string index = Folder() + "/index.json";
  std::ofstream(index, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));

  std::vector<std::string> warnings;
  const std::vector<std::string> as_index = {index};
  (void)shardloader::ResolveShards(as_index, {}, &warnings);
  const std::vector<std::string> as_folder = {Folder()};
  (void)shardloader::ResolveShards(as_folder, {}, &warnings);

  const std::string_view first_line = bytes.substr(0, bytes.find('\n'));
  if (first_line.size() <= 256) {  // a brace range expands to its product
    (void)shardloader::ExpandBraces(absl::string_view(first_line.data(), first_line.size()));
  }
  return 0;
}
