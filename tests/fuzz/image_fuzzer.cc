// Fuzz target: the image decode path (decode/image): JPEG and PNG through
// DecodeImage, with center crop (HWC), stretch (CHW) and random resized crop
// with flips, into buffers of exactly the output's size. libjpeg-turbo and
// libpng are not instrumented; the target covers shardloader's side of them
// (header checks, scaled and cropped decodes, resampling, error handling).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "shardloader/decode/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view encoded(reinterpret_cast<const char*>(data), size);
  shardloader::ImageOptions center{.height = 32, .width = 32};
  shardloader::ImageOptions stretch{.height = 7,
                                    .width = 19,
                                    .resize = shardloader::ResizeMode::kStretch,
                                    .layout = shardloader::Layout::kCHW};
  shardloader::ImageOptions random_crop{.height = 24,
                                        .width = 16,
                                        .resize = shardloader::ResizeMode::kRandomResizedCrop,
                                        .random_flip = true};
  const uint64_t seed = size * 0x9E3779B97F4A7C15ull;
  for (const shardloader::ImageOptions* options : {&center, &stretch, &random_crop}) {
    std::vector<uint8_t> dst(static_cast<size_t>(options->height) * options->width * 3);
    (void)shardloader::DecodeImage(encoded, *options, seed, dst.data());
  }
  return 0;
}
