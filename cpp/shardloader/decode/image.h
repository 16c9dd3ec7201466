// Image decoding: JPEG (libjpeg-turbo) and PNG (libpng) to RGB uint8,
// resized to a fixed size.
//
// The format is detected from the bytes, not the extension. Grayscale, gray +
// alpha, palette, RGBA, 16-bit and CMYK inputs all become 8-bit RGB (alpha is
// dropped). Resampling uses stb_image_resize (Debian's libstb-dev), a
// well-kept single-header library. EXIF orientation is not applied, as in
// PIL's Image.open and torchvision's decode_jpeg defaults.
//
// Thread-safety: DecodeImage is safe to call from many threads at once; each
// thread keeps its own decoder handle and scratch buffers, so steady-state
// decoding allocates nothing.
#ifndef SHARDLOADER_DECODE_IMAGE_H_
#define SHARDLOADER_DECODE_IMAGE_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"

namespace shardloader {

enum class ResizeMode {
  // Resize so the shorter side equals the target's, keeping the aspect ratio,
  // then take the center crop (torchvision's Resize + CenterCrop evaluation
  // transform, when height == width).
  kCenterCrop,
  // Resize to exactly height x width, ignoring the aspect ratio.
  kStretch,
};

enum class Layout {
  kHWC,  // (height, width, 3): PIL, NumPy, DALI default
  kCHW,  // (3, height, width): PyTorch convolution input
};

struct ImageOptions {
  int height = 0;  // output height in pixels, > 0
  int width = 0;   // output width in pixels, > 0
  ResizeMode resize = ResizeMode::kCenterCrop;
  Layout layout = Layout::kHWC;
};

// Decodes `encoded` (JPEG or PNG) and writes height * width * 3 bytes of
// uint8 RGB in options.layout to `dst`. Errors: DataLoss for corrupt,
// truncated or unsupported images ("not a JPEG or PNG image"); InvalidArgument
// for a non-positive size. Messages name the decoder's own error text.
absl::Status DecodeImage(std::string_view encoded, const ImageOptions& options,
                         uint8_t* dst);

}  // namespace shardloader

#endif  // SHARDLOADER_DECODE_IMAGE_H_
