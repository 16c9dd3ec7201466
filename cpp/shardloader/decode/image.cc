#include "shardloader/decode/image.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

// stb_image_resize makes exactly one allocation per resize; it is served from
// the calling thread's scratch vector passed as the allocation context, so a
// resize allocates nothing once the vector is large enough.
void* ResizeScratch(size_t size, void* context) {
  auto* scratch = static_cast<std::vector<unsigned char>*>(context);
  if (scratch->size() < size) scratch->resize(size);
  return scratch->data();
}

}  // namespace
}  // namespace shardloader

#define STBIR_MALLOC(size, context) \
  ::shardloader::ResizeScratch((size), (context))
#define STBIR_FREE(ptr, context) ((void)(ptr), (void)(context))
#define STB_IMAGE_RESIZE_STATIC
#define STB_IMAGE_RESIZE_IMPLEMENTATION
// Static functions of the library that this file does not call are unused.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb_image_resize.h>
#pragma GCC diagnostic pop

namespace shardloader {
namespace {

constexpr int kChannels = 3;

// Decoded images larger than this (16384 x 16384) are rejected before any
// pixel memory is allocated, so a corrupt or hostile header cannot make a
// worker allocate more than 1 GiB.
constexpr int64_t kMaxPixels = int64_t{1} << 28;

// Scratch vectors that grew past this (an unusually large image) are freed
// after the call instead of being kept by the thread for good.
constexpr size_t kMaxRetainedBytes = size_t{64} << 20;

// Per-thread decoder state, reused across calls.
struct Scratch {
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    if (jpeg != nullptr) tjDestroy(jpeg);
  }

  tjhandle jpeg = nullptr;           // created on first use
  std::vector<uint8_t> decoded;      // the decoded image, HWC RGB (or CMYK)
  std::vector<uint8_t> resized;      // the resized image before HWC -> CHW
  std::vector<unsigned char> resize_memory;  // stb_image_resize's buffers
  std::vector<png_bytep> png_rows;   // row pointers for libpng
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

uint8_t* Reserve(std::vector<uint8_t>& buffer, size_t size) {
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

template <typename T>
void ReleaseIfHuge(std::vector<T>& buffer) {
  if (buffer.capacity() * sizeof(T) > kMaxRetainedBytes) {
    std::vector<T>().swap(buffer);
  }
}

// A decoded image: height rows of width RGB pixels, rows contiguous.
struct Pixels {
  const uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
};

// Where a decoder writes: `direct` (the caller's HWC output) when the decoded
// image already has the output size, else the thread's scratch.
struct Target {
  int width = 0;
  int height = 0;
  uint8_t* direct = nullptr;  // null when the output is CHW
};

bool StartsWith(std::string_view bytes, std::string_view magic) {
  return bytes.substr(0, magic.size()) == magic;
}

absl::Status TooLarge(int64_t width, int64_t height) {
  return absl::DataLossError(
      absl::StrCat("image of ", width, "x", height,
                   " pixels is too large to decode (at most ", kMaxPixels,
                   " pixels)"));
}

// ---------------------------------------------------------------- JPEG ----

// Fails with TurboJPEG's message and drops the handle: after some errors
// (e.g. a header cut inside a Huffman table) libjpeg-turbo 2.1 leaves the
// handle mid-header, and every later image on it fails the same way.
absl::Status JpegError(Scratch& scratch) {
  absl::Status status = absl::DataLossError(
      absl::StrCat("JPEG decode failed: ", tjGetErrorStr2(scratch.jpeg)));
  tjDestroy(scratch.jpeg);
  scratch.jpeg = nullptr;
  return status;
}

// The smallest of TurboJPEG's DCT scaling factors (at most 1) that decodes a
// width x height image to at least need_width x need_height. This is enough
// for both resize modes: the center crop of a scaled image covers the output
// exactly when both scaled sides do.
tjscalingfactor ChooseScale(int width, int height, int need_width,
                            int need_height) {
  int num_factors = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&num_factors);
  tjscalingfactor best = {1, 1};
  int64_t best_pixels = int64_t{width} * height;
  for (int i = 0; i < num_factors; ++i) {
    const tjscalingfactor factor = factors[i];
    if (factor.num > factor.denom) continue;
    const int scaled_width = TJSCALED(width, factor);
    const int scaled_height = TJSCALED(height, factor);
    const int64_t pixels = int64_t{scaled_width} * scaled_height;
    if (scaled_width >= need_width && scaled_height >= need_height &&
        pixels < best_pixels) {
      best = factor;
      best_pixels = pixels;
    }
  }
  return best;
}

// Converts `num_pixels` CMYK pixels to RGB in place. libjpeg stores CMYK as
// Adobe writes it, inverted (255 = no ink), so R = C * K / 255 and so on.
void CmykToRgbInPlace(uint8_t* pixels, size_t num_pixels) {
  for (size_t i = 0; i < num_pixels; ++i) {
    const unsigned c = pixels[4 * i];
    const unsigned m = pixels[4 * i + 1];
    const unsigned y = pixels[4 * i + 2];
    const unsigned k = pixels[4 * i + 3];
    pixels[3 * i] = static_cast<uint8_t>((c * k + 127) / 255);
    pixels[3 * i + 1] = static_cast<uint8_t>((m * k + 127) / 255);
    pixels[3 * i + 2] = static_cast<uint8_t>((y * k + 127) / 255);
  }
}

absl::Status DecodeJpeg(std::string_view encoded, const Target& target,
                        Scratch& scratch, Pixels* out) {
  if (scratch.jpeg == nullptr) {
    scratch.jpeg = tjInitDecompress();
    if (scratch.jpeg == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "cannot create a JPEG decoder: ", tjGetErrorStr2(nullptr)));
    }
  }
  const auto* jpeg = reinterpret_cast<const unsigned char*>(encoded.data());
  int width = 0;
  int height = 0;
  int subsampling = TJSAMP_444;
  int colorspace = TJCS_RGB;
  if (tjDecompressHeader3(scratch.jpeg, jpeg, encoded.size(), &width, &height,
                          &subsampling, &colorspace) != 0) {
    // TurboJPEG 2.1 rejects sampling factors it has no name for (4:1:0,
    // 2x4, ...) after reading the whole header; decoding them works
    // (libjpeg-turbo issue #323). Anything else is a real error.
    if (subsampling != -1 || width <= 0 || height <= 0) {
      return JpegError(scratch);
    }
  }
  const tjscalingfactor scale =
      ChooseScale(width, height, target.width, target.height);
  out->width = TJSCALED(width, scale);
  out->height = TJSCALED(height, scale);
  const int64_t num_pixels = int64_t{out->width} * out->height;
  if (num_pixels > kMaxPixels) return TooLarge(out->width, out->height);

  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  uint8_t* pixels;
  if (!cmyk && target.direct != nullptr && out->width == target.width &&
      out->height == target.height) {
    pixels = target.direct;
  } else {
    pixels = Reserve(scratch.decoded, num_pixels * (cmyk ? 4 : kChannels));
  }
  // Warnings count as errors: libjpeg-turbo only warns about a truncated or
  // corrupt entropy-coded segment and fills the rest with gray, which would
  // be a silently wrong sample. The one exception is extraneous bytes before
  // a marker (JWRN_EXTRANEOUS_DATA), which leave the pixels intact and occur
  // in real datasets (ImageNet; PIL accepts them): such an image is decoded
  // again with warnings tolerated. TurboJPEG exposes only the last warning's
  // message, hence the test on its text. LIMITSCANS bounds the work a
  // hostile progressive JPEG can cause.
  const int format = cmyk ? TJPF_CMYK : TJPF_RGB;
  if (tjDecompress2(scratch.jpeg, jpeg, encoded.size(), pixels, out->width,
                    /*pitch=*/0, out->height, format,
                    TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS) != 0) {
    const bool only_extraneous_bytes =
        tjGetErrorCode(scratch.jpeg) == TJERR_WARNING &&
        std::string_view(tjGetErrorStr2(scratch.jpeg)).find("extraneous bytes") !=
            std::string_view::npos;
    if (!only_extraneous_bytes ||
        (tjDecompress2(scratch.jpeg, jpeg, encoded.size(), pixels, out->width,
                       /*pitch=*/0, out->height, format, TJFLAG_LIMITSCANS) != 0 &&
         std::string_view(tjGetErrorStr2(scratch.jpeg)).find("extraneous bytes") ==
             std::string_view::npos)) {
      return JpegError(scratch);
    }
  }
  if (cmyk) CmykToRgbInPlace(pixels, num_pixels);
  out->data = pixels;
  return absl::OkStatus();
}

// ----------------------------------------------------------------- PNG ----

struct PngInput {
  std::string_view bytes;
  size_t offset = 0;
  char error[200] = "";  // libpng's message, set before it jumps
};

void PngRead(png_structp png, png_bytep out, size_t size) {
  auto* input = static_cast<PngInput*>(png_get_io_ptr(png));
  if (size > input->bytes.size() - input->offset) {
    png_error(png, "unexpected end of data (truncated PNG)");
  }
  std::memcpy(out, input->bytes.data() + input->offset, size);
  input->offset += size;
}

[[noreturn]] void PngFail(png_structp png, png_const_charp message) {
  auto* input = static_cast<PngInput*>(png_get_error_ptr(png));
  std::snprintf(input->error, sizeof(input->error), "%s", message);
  png_longjmp(png, 1);
}

// Ancillary problems (a bad sRGB profile, a bad CRC in a text chunk) do not
// affect the pixels.
void PngWarn(png_structp, png_const_charp) {}

// Decodes the PNG into 8-bit RGB. Returns false with input->error set on a
// libpng error. libpng reports errors by longjmp to the setjmp below, so no
// object with a destructor may live in this frame, and nothing assigned
// after setjmp is read after the jump.
bool ReadPng(PngInput* input, const Target& target, Scratch& scratch,
             Pixels* out) {
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, input, PngFail, PngWarn);
  if (png == nullptr) {
    std::snprintf(input->error, sizeof(input->error), "out of memory");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    std::snprintf(input->error, sizeof(input->error), "out of memory");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, input, PngRead);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  if (int64_t{width} * height > kMaxPixels) {
    std::snprintf(input->error, sizeof(input->error),
                  "image of %ux%u pixels is too large (at most %lld pixels)",
                  static_cast<unsigned>(width), static_cast<unsigned>(height),
                  static_cast<long long>(kMaxPixels));
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  // Palette and low-bit-depth gray to 8 bits, 16 bits to the high byte,
  // gray to RGB, alpha (including tRNS) dropped: what PIL's convert("RGB")
  // gives. No gamma correction, as in PIL.
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != size_t{width} * kChannels) {
    png_error(png, "unexpected row size after conversion to RGB");
  }
  out->width = static_cast<int>(width);
  out->height = static_cast<int>(height);
  uint8_t* pixels;
  if (target.direct != nullptr && out->width == target.width &&
      out->height == target.height) {
    pixels = target.direct;
  } else {
    pixels = Reserve(scratch.decoded, size_t{width} * height * kChannels);
  }
  if (scratch.png_rows.size() < height) scratch.png_rows.resize(height);
  for (png_uint_32 row = 0; row < height; ++row) {
    scratch.png_rows[row] = pixels + size_t{row} * width * kChannels;
  }
  png_read_image(png, scratch.png_rows.data());
  // Reads up to IEND, so a file cut after the image data is an error too.
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  out->data = pixels;
  return true;
}

absl::Status DecodePng(std::string_view encoded, const Target& target,
                       Scratch& scratch, Pixels* out) {
  PngInput input;
  input.bytes = encoded;
  if (!ReadPng(&input, target, scratch, out)) {
    return absl::DataLossError(
        absl::StrCat("PNG decode failed: ", input.error));
  }
  return absl::OkStatus();
}

// -------------------------------------------------------------- resize ----

// Resamples `src` to width x height HWC into `dst`. kCenterCrop resamples
// the largest centered region of the output's aspect ratio, which equals
// resizing the shorter side and cropping, in a single pass.
absl::Status Resize(const Pixels& src, const ImageOptions& options,
                    Scratch& scratch, uint8_t* dst) {
  float s0 = 0.0f;
  float t0 = 0.0f;
  float s1 = 1.0f;
  float t1 = 1.0f;
  if (options.resize == ResizeMode::kCenterCrop) {
    const double scale =
        std::max(static_cast<double>(options.width) / src.width,
                 static_cast<double>(options.height) / src.height);
    // The region's size as a fraction of the source's, each at most 1.
    const double region_width = options.width / scale / src.width;
    const double region_height = options.height / scale / src.height;
    s0 = static_cast<float>((1.0 - region_width) / 2);
    s1 = static_cast<float>((1.0 + region_width) / 2);
    t0 = static_cast<float>((1.0 - region_height) / 2);
    t1 = static_cast<float>((1.0 + region_height) / 2);
  }
  if (!stbir_resize_region(
          src.data, src.width, src.height, /*input_stride_in_bytes=*/0, dst,
          options.width, options.height, /*output_stride_in_bytes=*/0,
          STBIR_TYPE_UINT8, kChannels, STBIR_ALPHA_CHANNEL_NONE, /*flags=*/0,
          STBIR_EDGE_CLAMP, STBIR_EDGE_CLAMP, STBIR_FILTER_TRIANGLE,
          STBIR_FILTER_TRIANGLE, STBIR_COLORSPACE_LINEAR,
          &scratch.resize_memory, s0, t0, s1, t1)) {
    return absl::ResourceExhaustedError("image resize failed");
  }
  return absl::OkStatus();
}

// Writes the height x width RGB pixels at `pixels` (rows `row_bytes` apart)
// to `dst` in `layout`.
void CopyOut(const uint8_t* pixels, size_t row_bytes, int width, int height,
             Layout layout, uint8_t* dst) {
  const size_t out_row_bytes = static_cast<size_t>(width) * kChannels;
  if (layout == Layout::kHWC) {
    for (int y = 0; y < height; ++y) {
      std::memcpy(dst + y * out_row_bytes, pixels + y * row_bytes,
                  out_row_bytes);
    }
    return;
  }
  const size_t plane = static_cast<size_t>(width) * height;
  for (int y = 0; y < height; ++y) {
    const uint8_t* in = pixels + y * row_bytes;
    uint8_t* red = dst + static_cast<size_t>(y) * width;
    uint8_t* green = red + plane;
    uint8_t* blue = green + plane;
    for (int x = 0; x < width; ++x) {
      red[x] = in[kChannels * x];
      green[x] = in[kChannels * x + 1];
      blue[x] = in[kChannels * x + 2];
    }
  }
}

// Writes `src` to `dst` at the output size and layout. When the output is
// `src` itself or a center crop of it without scaling, pixels are copied
// (the crop offset rounded down), not resampled: resampling at scale 1 would
// still blur.
absl::Status Store(const Pixels& src, const ImageOptions& options,
                   Scratch& scratch, uint8_t* dst) {
  if (src.data == dst) return absl::OkStatus();  // decoded in place
  const size_t src_row_bytes = static_cast<size_t>(src.width) * kChannels;
  const bool crop_only =
      options.resize == ResizeMode::kCenterCrop
          ? (src.width == options.width && src.height >= options.height) ||
                (src.height == options.height && src.width >= options.width)
          : src.width == options.width && src.height == options.height;
  if (crop_only) {
    const int x0 = (src.width - options.width) / 2;
    const int y0 = (src.height - options.height) / 2;
    CopyOut(src.data + y0 * src_row_bytes + x0 * kChannels, src_row_bytes,
            options.width, options.height, options.layout, dst);
    return absl::OkStatus();
  }
  if (options.layout == Layout::kHWC) return Resize(src, options, scratch, dst);
  const size_t row_bytes = static_cast<size_t>(options.width) * kChannels;
  uint8_t* resized = Reserve(scratch.resized, row_bytes * options.height);
  SL_RETURN_IF_ERROR(Resize(src, options, scratch, resized));
  CopyOut(resized, row_bytes, options.width, options.height, Layout::kCHW,
          dst);
  return absl::OkStatus();
}

}  // namespace

absl::Status DecodeImage(std::string_view encoded, const ImageOptions& options,
                         uint8_t* dst) {
  if (options.height <= 0 || options.width <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("image size must be positive, got height ",
                     options.height, " and width ", options.width));
  }
  if (int64_t{options.height} * options.width > kMaxPixels) {
    return absl::InvalidArgumentError(
        absl::StrCat("image size ", options.height, "x", options.width,
                     " is too large (at most ", kMaxPixels, " pixels)"));
  }
  Scratch& scratch = ThreadScratch();
  Target target;
  target.width = options.width;
  target.height = options.height;
  if (options.layout == Layout::kHWC) target.direct = dst;

  Pixels pixels;
  absl::Status status;
  if (StartsWith(encoded, "\xFF\xD8\xFF")) {
    status = DecodeJpeg(encoded, target, scratch, &pixels);
  } else if (StartsWith(encoded, "\x89PNG\r\n\x1A\n")) {
    status = DecodePng(encoded, target, scratch, &pixels);
  } else {
    return absl::DataLossError("not a JPEG or PNG image");
  }
  if (status.ok()) status = Store(pixels, options, scratch, dst);
  ReleaseIfHuge(scratch.decoded);
  ReleaseIfHuge(scratch.resized);
  ReleaseIfHuge(scratch.resize_memory);
  return status;
}

}  // namespace shardloader
