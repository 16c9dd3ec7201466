// Image decoding: JPEG (libjpeg-turbo) and PNG (libpng) to RGB uint8,
// resized to a fixed size.
//
// The format is detected from the bytes, not the extension. Grayscale, gray +
// alpha, palette, RGBA, 16-bit and CMYK inputs all become 8-bit RGB (alpha is
// dropped, 16-bit samples keep their high byte, no gamma correction): the
// bytes of PIL's Image.open(...).convert("RGB"). EXIF orientation is not
// applied, as in PIL's Image.open and torchvision's decode_jpeg defaults.
//
// Decoding is strict: libjpeg-turbo's warnings (a truncated file, corrupt
// entropy-coded data, which it would fill with gray) are errors, because a
// half-gray image would be a silently wrong sample. Extraneous bytes before
// a marker are the exception: they leave the pixels intact.
//
// Resampling uses stb_image_resize (Debian's libstb-dev) with its triangle
// filter, widened when shrinking (antialiased): the filter of PIL's BILINEAR
// and of torchvision's Resize(antialias=True). It works on the stored
// (sRGB-encoded) values, edges clamped. An output that needs no scaling (the image's own
// size, or a center crop of it) is copied, not resampled. When shrinking a
// JPEG, TurboJPEG first decodes at the smallest DCT scale (1/8, 1/4, 3/8,
// ...) that still covers the output, which is much faster and keeps quality.
//
// Thread-safety: DecodeImage is safe to call from many threads at once; each
// thread keeps its own TurboJPEG handle and its scratch buffers (decoded and
// resized images, the resizer's memory) across calls, so steady state only
// allocates the codecs' small per-image state. Buffers grown past 64 MiB by an
// unusually large image are freed after the call.
#ifndef SHARDLOADER_DECODE_IMAGE_H_
#define SHARDLOADER_DECODE_IMAGE_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"

namespace shardloader {

enum class ResizeMode {
  // Scale, keeping the aspect ratio, to the smallest size that covers
  // height x width, then take the center crop: for a square output, the
  // shorter side becomes the output's (torchvision's Resize(s) followed by
  // CenterCrop(s)). Done as one resampling of the centered source region.
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
// uint8 RGB in options.layout to `dst` (whose contents are unspecified after
// an error). Errors: DataLoss for corrupt, truncated or unsupported images
// ("not a JPEG or PNG image") and for images over 2^28 decoded pixels,
// with the decoder's own text ("JPEG decode failed: Premature end of JPEG
// file"); InvalidArgument for a non-positive size or one over 2^28 pixels.
absl::Status DecodeImage(std::string_view encoded, const ImageOptions& options,
                         uint8_t* dst);

}  // namespace shardloader

#endif  // SHARDLOADER_DECODE_IMAGE_H_
