// Microbenchmarks of image decoding, single-threaded: a full-resolution
// TurboJPEG decode (the cost of any pipeline that decodes whole images) and
// DecodeImage in each resize mode, on ImageNet photos.
//
// Reads every <dir>/imagenet-sample/*/*.JPEG, <dir> being the environment
// variable SHARDLOADER_SHARED_DATA_DIR if set, else the compile-time
// definition of the same name; every benchmark is skipped with a message if
// no JPEG is found there. Each iteration decodes the next image (cycling
// through all of them, in sorted order); items_per_second is images per
// second. DecodeImage's seed is the iteration number, so random crops vary
// as in training.
//
// Standalone build (from the repository root):
//   g++ -std=c++20 -O2 -Icpp -DSHARDLOADER_SHARED_DATA_DIR='"/path/to/data"'
//     benchmarks/micro/image_decode_benchmark.cc
//     cpp/shardloader/decode/image.cc cpp/shardloader/internal/random.cc
//     cpp/shardloader/status.cc -o image_decode_benchmark
//     $(pkg-config --libs benchmark libturbojpeg libjpeg libpng absl_status
//       absl_strings absl_cord) -lpthread
#include <turbojpeg.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "shardloader/decode/image.h"

namespace shardloader {
namespace {

namespace fs = std::filesystem;

fs::path SharedDataDir() {
  if (const char* dir = std::getenv("SHARDLOADER_SHARED_DATA_DIR")) {
    return dir;
  }
#ifdef SHARDLOADER_SHARED_DATA_DIR
  return SHARDLOADER_SHARED_DATA_DIR;
#else
  return {};
#endif
}

fs::path ImagesDir() { return SharedDataDir() / "imagenet-sample"; }

// The encoded JPEGs, read once.
const std::vector<std::string>& Jpegs() {
  static const std::vector<std::string>* const jpegs = [] {
    auto* files = new std::vector<std::string>();
    std::error_code error;
    if (!fs::is_directory(ImagesDir(), error)) return files;
    std::vector<fs::path> paths;
    for (const auto& entry : fs::recursive_directory_iterator(ImagesDir())) {
      if (entry.path().extension() == ".JPEG") paths.push_back(entry.path());
    }
    std::sort(paths.begin(), paths.end());
    for (const fs::path& path : paths) {
      std::ifstream file(path, std::ios::binary);
      files->emplace_back(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    }
    return files;
  }();
  return *jpegs;
}

bool SkipWithoutImages(benchmark::State& state) {
  if (!Jpegs().empty()) return false;
  state.SkipWithError(
      ("no *.JPEG under " + ImagesDir().string() + "/*/; set SHARDLOADER_SHARED_DATA_DIR").c_str());
  return true;
}

// A full-resolution RGB decode with TurboJPEG (tjDecompress2, scale 1): the
// baseline that crop-aware decoding is measured against.
void BM_TurboJpegFullDecode(benchmark::State& state) {
  if (SkipWithoutImages(state)) return;
  const std::vector<std::string>& jpegs = Jpegs();
  tjhandle handle = tjInitDecompress();
  std::vector<unsigned char> pixels;
  size_t next = 0;
  for (auto _ : state) {
    const std::string& jpeg = jpegs[next++ % jpegs.size()];
    const auto* bytes = reinterpret_cast<const unsigned char*>(jpeg.data());
    int width = 0;
    int height = 0;
    int subsampling = 0;
    int colorspace = 0;
    tjDecompressHeader3(handle, bytes, jpeg.size(), &width, &height, &subsampling, &colorspace);
    pixels.resize(size_t{3} * width * height);
    if (tjDecompress2(handle, bytes, jpeg.size(), pixels.data(), width, 0, height, TJPF_RGB, 0) !=
        0) {
      state.SkipWithError(tjGetErrorStr2(handle));
      break;
    }
    benchmark::DoNotOptimize(pixels.data());
  }
  tjDestroy(handle);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TurboJpegFullDecode);

// DecodeImage to 224 x 224 HWC in `mode`.
void BM_DecodeImage(benchmark::State& state, ResizeMode mode, bool flip) {
  if (SkipWithoutImages(state)) return;
  const std::vector<std::string>& jpegs = Jpegs();
  ImageOptions options;
  options.height = 224;
  options.width = 224;
  options.resize = mode;
  options.random_flip = flip;
  std::vector<uint8_t> output(size_t{3} * 224 * 224);
  uint64_t next = 0;
  for (auto _ : state) {
    const absl::Status status =
        DecodeImage(jpegs[next % jpegs.size()], options, next, output.data());
    if (!status.ok()) {
      state.SkipWithError(std::string(status.message()).c_str());
      break;
    }
    ++next;
    benchmark::DoNotOptimize(output.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_DecodeImage, center_crop_224, ResizeMode::kCenterCrop, false);
BENCHMARK_CAPTURE(BM_DecodeImage, stretch_224, ResizeMode::kStretch, false);
BENCHMARK_CAPTURE(BM_DecodeImage, random_resized_crop_224, ResizeMode::kRandomResizedCrop, false);
BENCHMARK_CAPTURE(BM_DecodeImage, random_resized_crop_224_flip, ResizeMode::kRandomResizedCrop,
                  true);

}  // namespace
}  // namespace shardloader

BENCHMARK_MAIN();
