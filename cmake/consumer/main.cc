// A C++ trainer's view of shardloader: write a shard, stream it back.
// Exits non-zero if anything differs from what was written.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "shardloader/loader.h"
#include "shardloader/shard_writer.h"

int main() {
  const std::string dir =
      (std::filesystem::temp_directory_path() / "shardloader-consumer").string();
  std::filesystem::create_directories(dir);
  auto writer = shardloader::ShardWriter::Create({.pattern = dir + "/c-%02d.tar"});
  if (!writer.ok()) return 1;
  for (int i = 0; i < 10; ++i) {
    if (!(*writer)->Write("k" + std::to_string(i), {{"cls", std::to_string(i)}}).ok()) {
      return 2;
    }
  }
  if (!(*writer)->Close().ok()) return 3;

  shardloader::LoaderOptions options;
  options.shards = {dir + "/c-{00..00}.tar"};
  options.fields = {{.name = "label", .extensions = {"cls"}, .kind = shardloader::FieldKind::kInt}};
  options.batch_size = 4;
  options.shuffle = false;
  auto loader = shardloader::Loader::Create(options);
  if (!loader.ok()) return 4;
  int64_t expected = 0;
  while (true) {
    auto batch = (*loader)->Next();
    if (!batch.ok()) {
      std::fprintf(stderr, "%s\n", batch.status().ToString().c_str());
      return 5;
    }
    if (!batch->has_value()) break;
    const auto* labels = static_cast<const int64_t*>((*batch)->Find("label")->values.data);
    for (int64_t i = 0; i < (*batch)->num_samples(); ++i) {
      if (labels[i] != expected++) return 6;
    }
  }
  std::filesystem::remove_all(dir);
  std::printf("consumer read %lld samples\n", static_cast<long long>(expected));
  return expected == 10 ? 0 : 7;
}
