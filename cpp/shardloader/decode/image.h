// Image decoding: JPEG (libjpeg-turbo) and PNG (libpng) to RGB uint8,
// resized to a fixed size, with the training-time random crop and flip.
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
// a marker are the exception: they leave the pixels intact. A JPEG is always
// checked to its end, even when only a crop of it is decoded, so whether a
// file decodes never depends on the crop (or the seed).
//
// Geometry: each mode picks a region of the source image (see ResizeMode) and
// resamples it to height x width with PIL's BILINEAR filter, reimplemented
// (Image.resize; the filter of torchvision's Resize and RandomResizedCrop on
// PIL images, and of its tensor path with antialias=True): a triangle
// widened by the shrink factor (antialiased), truncated at the image's edges
// and normalized, in 22-bit fixed point, horizontal pass first, on the
// stored (sRGB-encoded) values. At full scale the output is Pillow's (up to
// version 12) to the bit. A region of exactly the output's size (the image's
// own size, or a center crop of it) is copied, not resampled. A JPEG is
// decoded at the smallest DCT scale k / 8 at which the region still covers
// the output, k being 1, 2, 4 or 8 (libjpeg-turbo's other scales lack SIMD
// and are slower than a full decode); the scaled image (ceil(w * k / 8)
// pixels wide) is taken to cover the whole source, so a region at fraction
// f of the source is at fraction f of the scaled image. Only the rows and
// columns that the filter reads are decoded (plus a few columns, and the
// columns up to the JPEG's iMCU boundary); the rows below still pass
// through the entropy decoder. (stb_image_resize 0.97, used before,
// overflows its table of weights for some exact rational scale factors,
// such as 288 -> 224, and then corrupts an output row.)
//
// Randomness: the random choices (the kRandomResizedCrop box, the flip) are
// pure functions of the `seed` argument, exposed below, so a caller that
// derives the seed from (loader seed, epoch, sample) gets the same pixels on
// any thread, machine or run.
//
// Thread-safety: the functions here are safe to call from many threads at
// once; each thread keeps its own libjpeg decoder and scratch buffers
// (decoded region, filter weights, resampled rows) across calls, so
// steady state only allocates the codecs' small per-image state. Buffers
// grown past 64 MiB by an unusually large image are freed after the call.
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
  // torchvision's RandomResizedCrop(size=(height, width), scale=(min_scale,
  // max_scale), ratio=(min_ratio, max_ratio)): the box given by
  // SampleRandomResizedCrop on the full-resolution image, cropped, then
  // resized to height x width as an image of its own (the filter does not
  // see beyond the crop).
  kRandomResizedCrop,
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
  // kRandomResizedCrop only: the range of the crop's area as a fraction of
  // the image's, 0 < min_scale <= max_scale, and of its aspect ratio
  // (width / height), 0 < min_ratio <= max_ratio. torchvision's defaults.
  double min_scale = 0.08;
  double max_scale = 1.0;
  double min_ratio = 3.0 / 4;
  double max_ratio = 4.0 / 3;
  // Mirrors the output left-right for about half of the seeds (those for
  // which SampleHorizontalFlip(seed) is true), in every mode: torchvision's
  // RandomHorizontalFlip() applied after the resize.
  bool random_flip = false;
};

// A crop box in pixels: columns [x, x + width), rows [y, y + height).
struct CropBox {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
};

// The crop box of torchvision's RandomResizedCrop.get_params for a
// width x height image (both > 0), drawn from a generator seeded with `seed`
// (internal_random::Rng): up to 10 attempts, each drawing an area fraction
// uniform in [min_scale, max_scale) and an aspect ratio log-uniform in
// [min_ratio, max_ratio), rounding the box's sides half to even (Python's
// round) and accepting the first box that fits in the image, placed
// uniformly at random; otherwise the central crop of the whole width or
// height with the aspect ratio clamped to [min_ratio, max_ratio] (at least
// one pixel per side). Only the algorithm is torchvision's: its random
// numbers come from torch's generator, not this one. Pure: the same
// arguments always give the same box, which lies inside the image. Uses
// only the min/max scale and ratio fields of `options`.
CropBox SampleRandomResizedCrop(int width, int height, const ImageOptions& options, uint64_t seed);

// Whether DecodeImage mirrors the output for `seed` when options.random_flip
// is set: true for about half of the seeds, independently of the crop box.
bool SampleHorizontalFlip(uint64_t seed);

// Checks `options`: a positive output size within the pixel limit and, for
// kRandomResizedCrop, finite ranges with 0 < min <= max. Errors:
// InvalidArgument naming the bad value.
absl::Status ValidateImageOptions(const ImageOptions& options);

// Decodes `encoded` (JPEG or PNG) and writes height * width * 3 bytes of
// uint8 RGB in options.layout to `dst` (whose contents are unspecified after
// an error). Every random choice (options.resize == kRandomResizedCrop,
// options.random_flip) derives from `seed` alone; other calls ignore it.
// Errors: DataLoss for corrupt, truncated or unsupported images ("not a JPEG
// or PNG image") and for images over 2^28 decoded pixels, with the decoder's
// own text ("JPEG decode failed: Premature end of JPEG file");
// InvalidArgument for a non-positive size or one over 2^28 pixels, and for
// kRandomResizedCrop with a scale or ratio range that is not finite,
// positive and ordered.
absl::Status DecodeImage(std::string_view encoded, const ImageOptions& options, uint64_t seed,
                         uint8_t* dst);

}  // namespace shardloader

#endif  // SHARDLOADER_DECODE_IMAGE_H_
