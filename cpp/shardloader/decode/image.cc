#include "shardloader/decode/image.h"

// jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "shardloader/decode/resample.h"
#include "shardloader/internal/random.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

using internal_random::Rng;
using internal_resample::Axis;
using internal_resample::BuildAxis;
using internal_resample::Span;

constexpr int kChannels = 3;

// Decoded images larger than this (16384 x 16384) are rejected before any
// pixel memory is allocated, so a corrupt or hostile header cannot make a
// worker allocate more than 1 GiB.
constexpr int64_t kMaxPixels = int64_t{1} << 28;

// Scratch vectors that grew past this (an unusually large image) are freed
// after the call instead of being kept by the thread for good.
constexpr size_t kMaxRetainedBytes = size_t{64} << 20;

// torchvision's RandomResizedCrop.get_params tries this many boxes before
// falling back to a central crop.
constexpr int kCropAttempts = 10;

// The flip is drawn from its own stream, DeriveSeed(seed, {kFlipStream}), so
// that it does not depend on how many numbers the crop sampler drew.
constexpr uint64_t kFlipStream = 0x666c6970;  // "flip"

// TurboJPEG's TJFLAG_LIMITSCANS bound: a hostile progressive JPEG with
// thousands of tiny scans would otherwise take minutes to decode.
constexpr int kMaxJpegScans = 500;

// A uniform double in [0, 1) from the top 53 bits of the generator.
double UniformUnit(Rng& rng) { return static_cast<double>(rng.Next() >> 11) * 0x1.0p-53; }

// Python's round(): to the nearest integer, ties to even.
double RoundHalfToEven(double x) {
  const double floor = std::floor(x);
  const double fraction = x - floor;
  if (fraction > 0.5) return floor + 1;
  if (fraction < 0.5) return floor;
  return std::fmod(floor, 2.0) == 0 ? floor : floor + 1;
}

// ------------------------------------------------------------- scratch ----

// libjpeg's error manager extended with where to jump and the message.
// libjpeg reports an error (and, through JpegMessage, a warning) by calling
// error_exit, which longjmps back to the setjmp in whichever of the Jpeg*
// functions below called into libjpeg: those functions keep no object with
// a destructor in their frame.
struct JpegErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg sees a jpeg_error_mgr*
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

// A libjpeg decompressor, created on first use and reused for every JPEG the
// thread decodes (jpeg_abort_decompress returns it to its idle state).
struct JpegDecoder {
  jpeg_decompress_struct cinfo;
  JpegErrorManager error;
  jpeg_progress_mgr progress;
  bool created = false;
  bool multiple_scans = false;  // progressive or non-interleaved
};

// Per-thread decoder state, reused across calls.
struct Scratch {
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    if (jpeg.created) jpeg_destroy_decompress(&jpeg.cinfo);
  }

  JpegDecoder jpeg;
  std::vector<uint8_t> decoded;      // decoded pixels, RGB (or CMYK) rows
  std::vector<uint8_t> spare_row;    // a JPEG row read only to be checked
  std::vector<unsigned char*> rows;  // row pointers for the codecs
  Axis x_axis;                       // the resampling filters
  Axis y_axis;
  internal_resample::ResampleScratch resample;
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

// ------------------------------------------------------------ geometry ----

// Decoded pixels: height rows of width RGB pixels, `stride` bytes apart; the
// top-left one is pixel (x, y) of the (possibly DCT-scaled) image.
struct Pixels {
  const uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  size_t stride = 0;
  int x = 0;
  int y = 0;
};

// A rectangle in (fractional) pixel coordinates: [x0, x1) x [y0, y1).
struct Region {
  double x0 = 0;
  double y0 = 0;
  double x1 = 0;
  double y1 = 0;
  double width() const { return x1 - x0; }
  double height() const { return y1 - y0; }
};

// The region that the output samples, in the coordinates of a width x height
// decode (possibly DCT-scaled) of a full_width x full_height image. `box` is
// the kRandomResizedCrop box in full-resolution pixels.
Region SourceRegion(const ImageOptions& options, const CropBox& box, int full_width,
                    int full_height, int width, int height) {
  switch (options.resize) {
    case ResizeMode::kStretch:
      break;
    case ResizeMode::kCenterCrop: {
      // The largest centered region of the output's aspect ratio: resizing
      // the shorter side and cropping, in one pass.
      const double scale = std::max(static_cast<double>(options.width) / width,
                                    static_cast<double>(options.height) / height);
      const double region_width = options.width / scale;
      const double region_height = options.height / scale;
      return {(width - region_width) / 2, (height - region_height) / 2, (width + region_width) / 2,
              (height + region_height) / 2};
    }
    case ResizeMode::kRandomResizedCrop: {
      const double x_scale = static_cast<double>(width) / full_width;
      const double y_scale = static_cast<double>(height) / full_height;
      return {box.x * x_scale, box.y * y_scale, (box.x + box.width) * x_scale,
              (box.y + box.height) * y_scale};
    }
  }
  return {0, 0, static_cast<double>(width), static_cast<double>(height)};
}

// Coordinates within this of an integer count as that integer.
constexpr double kEpsilon = 1e-9;

int FloorInt(double x) { return static_cast<int>(std::floor(x + kEpsilon)); }
int CeilInt(double x) { return static_cast<int>(std::ceil(x - kEpsilon)); }

// How the output is made from a width x height decode: copied from
// (copy_x, copy_y), or resampled with the thread's x_axis and y_axis.
struct Plan {
  bool copy = false;
  int copy_x = 0;
  int copy_y = 0;
  Span columns;  // the decoded pixels that are read
  Span rows;
};

// Plans the output for `region` of a width x height decode. A region of
// exactly the output's size is copied, its offset rounded down, since
// resampling at scale 1 would still blur. Otherwise the filter sees the
// whole image, or for kRandomResizedCrop only the crop, which is then an
// image of its own (torchvision crops, then resizes): the crop's pixels are
// those that the region covers, even partly.
Plan PlanOutput(const Region& region, const ImageOptions& options, int width, int height,
                Scratch& scratch) {
  Plan plan;
  if (std::abs(region.width() - options.width) < kEpsilon &&
      std::abs(region.height() - options.height) < kEpsilon) {
    plan.copy = true;
    plan.copy_x = std::clamp(FloorInt(region.x0), 0, width - options.width);
    plan.copy_y = std::clamp(FloorInt(region.y0), 0, height - options.height);
    plan.columns = {plan.copy_x, plan.copy_x + options.width};
    plan.rows = {plan.copy_y, plan.copy_y + options.height};
    return plan;
  }
  Span x_bounds{0, width};
  Span y_bounds{0, height};
  if (options.resize == ResizeMode::kRandomResizedCrop) {
    x_bounds = {std::max(0, FloorInt(region.x0)), std::min(width, CeilInt(region.x1))};
    y_bounds = {std::max(0, FloorInt(region.y0)), std::min(height, CeilInt(region.y1))};
  }
  BuildAxis(region.x0, region.x1, x_bounds, options.width, &scratch.x_axis);
  BuildAxis(region.y0, region.y1, y_bounds, options.height, &scratch.y_axis);
  plan.columns = scratch.x_axis.Reads();
  plan.rows = scratch.y_axis.Reads();
  return plan;
}

absl::Status TooLarge(int64_t width, int64_t height) {
  return absl::DataLossError(absl::StrCat("image of ", width, "x", height,
                                          " pixels is too large to decode (at most ", kMaxPixels,
                                          " pixels)"));
}

bool StartsWith(std::string_view bytes, std::string_view magic) {
  return bytes.substr(0, magic.size()) == magic;
}

// ---------------------------------------------------------------- JPEG ----

[[noreturn]] void JpegFail(j_common_ptr cinfo) {
  auto* error = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, error->message);
  std::longjmp(error->jump, 1);
}

// Warnings count as errors: libjpeg-turbo only warns about a truncated or
// corrupt entropy-coded segment and fills the rest with gray, which would
// be a silently wrong sample. The one exception is extraneous bytes before
// a marker, which leave the pixels intact and occur in real datasets
// (ImageNet; PIL accepts them). Trace messages (level > 0) are ignored.
void JpegMessage(j_common_ptr cinfo, int msg_level) {
  if (msg_level >= 0 || cinfo->err->msg_code == JWRN_EXTRANEOUS_DATA) return;
  JpegFail(cinfo);
}

void JpegProgress(j_common_ptr cinfo) {
  if (cinfo->is_decompressor &&
      reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number > kMaxJpegScans) {
    auto* error = reinterpret_cast<JpegErrorManager*>(cinfo->err);
    std::snprintf(error->message, sizeof(error->message),
                  "Progressive JPEG image has more than %d scans", kMaxJpegScans);
    std::longjmp(error->jump, 1);
  }
}

// Creates the decoder if needed and reads the header of `encoded`. Returns
// false with decoder->error.message set on an error.
bool JpegReadHeader(JpegDecoder* decoder, std::string_view encoded) {
  j_decompress_ptr cinfo = &decoder->cinfo;
  if (setjmp(decoder->error.jump)) return false;
  if (!decoder->created) {
    cinfo->err = jpeg_std_error(&decoder->error.pub);
    decoder->error.pub.error_exit = JpegFail;
    decoder->error.pub.emit_message = JpegMessage;
    jpeg_create_decompress(cinfo);
    decoder->progress.progress_monitor = JpegProgress;
    cinfo->progress = &decoder->progress;
    decoder->created = true;
  }
  jpeg_mem_src(cinfo, reinterpret_cast<const unsigned char*>(encoded.data()), encoded.size());
  jpeg_read_header(cinfo, TRUE);
  decoder->multiple_scans = jpeg_has_multiple_scans(cinfo);
  return true;
}

// Which part of the scaled image JpegReadRows decodes, and where to.
struct JpegRows {
  JDIMENSION width = 0;  // expected scaled image size
  JDIMENSION height = 0;
  JDIMENSION x0 = 0;  // columns [x0, x1) and rows [y0, y1) wanted
  JDIMENSION x1 = 0;
  JDIMENSION y0 = 0;
  JDIMENSION y1 = 0;
  unsigned char** rows = nullptr;      // y1 - y0 row pointers
  unsigned char* spare_row = nullptr;  // one row of the full scaled width
  // Set by JpegReadRows: the decoded columns are [x_offset, x_offset +
  // decoded_width), each row starting at its row pointer. libjpeg widens
  // the range to iMCU boundaries on the left.
  JDIMENSION x_offset = 0;
  JDIMENSION decoded_width = 0;
};

// Decodes the rows and columns `read` asks for (cinfo's scale and color
// space already set) and then checks the rest of the file, so that the
// outcome does not depend on the crop: a truncated or corrupt JPEG fails
// even when the damage lies below the crop. Rows after the crop still need
// their entropy decoding (the bit stream is sequential) but skip the IDCT,
// except for the last one, read so that libjpeg reaches the end of the scan
// (skipping to the bottom would stop it there). Returns false with
// decoder->error.message set on an error.
bool JpegReadRows(JpegDecoder* decoder, JpegRows* read) {
  j_decompress_ptr cinfo = &decoder->cinfo;
  if (setjmp(decoder->error.jump)) return false;
  jpeg_start_decompress(cinfo);
  if (cinfo->output_width != read->width || cinfo->output_height != read->height) {
    std::snprintf(decoder->error.message, sizeof(decoder->error.message),
                  "unexpected scaled size %ux%u (expected %ux%u)", cinfo->output_width,
                  cinfo->output_height, read->width, read->height);
    return false;
  }
  read->x_offset = read->x0;
  read->decoded_width = read->x1 - read->x0;
  jpeg_crop_scanline(cinfo, &read->x_offset, &read->decoded_width);
  if (read->y0 > 0) jpeg_skip_scanlines(cinfo, read->y0);
  while (cinfo->output_scanline < read->y1) {
    const JDIMENSION row = cinfo->output_scanline - read->y0;
    const JDIMENSION wanted = read->y1 - read->y0 - row;
    if (jpeg_read_scanlines(cinfo, read->rows + row, wanted) == 0) {
      std::snprintf(decoder->error.message, sizeof(decoder->error.message),
                    "no scanlines returned");
      return false;
    }
  }
  if (read->y1 < read->height) {
    if (read->y1 + 1 < read->height) {
      jpeg_skip_scanlines(cinfo, read->height - 1 - read->y1);
    }
    jpeg_read_scanlines(cinfo, &read->spare_row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

// Whether libjpeg-turbo 2.1's partial decoding (jpeg_crop_scanline,
// jpeg_skip_scanlines) gives exactly the pixels of a whole decode at every
// DCT scale for this image's sampling layout. It does for grayscale and for
// 4:4:4, 4:2:2, 4:4:0, 4:2:0 and 4:1:1, baseline or progressive (checked
// against whole decodes for every scale and many crops); for 4:1:0 (luma
// 4x2) and luma 2x4 it returns wrong pixels, or loses its place in the
// entropy-coded data, at scales 2/8 to 7/8. Other layouts are decoded whole
// (still DCT-scaled).
bool PartialDecodingIsExact(const jpeg_decompress_struct& cinfo) {
  const jpeg_component_info* components = cinfo.comp_info;
  for (int i = 1; i < cinfo.num_components; ++i) {
    if (components[i].h_samp_factor != 1 || components[i].v_samp_factor != 1) {
      return false;
    }
  }
  const int h = components[0].h_samp_factor;
  const int v = components[0].v_samp_factor;
  return cinfo.num_components == 1 || ((h == 1 || h == 2) && (v == 1 || v == 2)) ||
         (h == 4 && v == 1);
}

absl::Status JpegError(const JpegDecoder& decoder) {
  return absl::DataLossError(absl::StrCat("JPEG decode failed: ", decoder.error.message));
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

// Decodes the part of a JPEG (header already read into `decoder`) that the
// output needs, at the smallest DCT scale at which the region still covers
// the output, and plans the output from it. Writes straight to `direct`
// (the caller's HWC output, or null) when the decoded image is the output.
absl::Status DecodeJpegRegion(const ImageOptions& options, uint64_t seed, uint8_t* direct,
                              Scratch& scratch, Pixels* out, Plan* plan) {
  JpegDecoder& decoder = scratch.jpeg;
  jpeg_decompress_struct& cinfo = decoder.cinfo;
  const int full_width = static_cast<int>(cinfo.image_width);
  const int full_height = static_cast<int>(cinfo.image_height);
  // Multi-scan JPEGs keep the coefficients of the whole full-size image in
  // memory, whatever the scale.
  if (decoder.multiple_scans && int64_t{full_width} * full_height > kMaxPixels) {
    return TooLarge(full_width, full_height);
  }
  const CropBox box = options.resize == ResizeMode::kRandomResizedCrop
                          ? SampleRandomResizedCrop(full_width, full_height, options, seed)
                          : CropBox{0, 0, full_width, full_height};

  // The smallest scale k / 8 whose region covers the output, k a power of
  // two: libjpeg-turbo has SIMD inverse DCTs for 8/8 and the reduced 4/8,
  // 2/8 and 1/8 only, and its 5/8 to 7/8 are slower than a full decode
  // (ImageNet photos, AMD EPYC with AVX2: 7/8 decodes 510 images/s, 8/8 840,
  // 4/8 975); 3/8 is no faster than 4/8. libjpeg's scaled size is
  // ceil(size * k / 8).
  int width = 0;
  int height = 0;
  int eighths = 8;
  Region region;
  for (const int k : {1, 2, 4, 8}) {
    width = static_cast<int>((int64_t{full_width} * k + 7) / 8);
    height = static_cast<int>((int64_t{full_height} * k + 7) / 8);
    region = SourceRegion(options, box, full_width, full_height, width, height);
    if (region.width() >= options.width - kEpsilon &&
        region.height() >= options.height - kEpsilon) {
      eighths = k;
      break;
    }
  }
  if (int64_t{width} * height > kMaxPixels) return TooLarge(width, height);
  cinfo.scale_num = static_cast<unsigned int>(eighths);
  cinfo.scale_denom = 8;
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  // libjpeg-turbo converts grayscale to RGB too.
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  const int channels = cmyk ? 4 : kChannels;

  *plan = PlanOutput(region, options, width, height, scratch);
  // With a horizontal crop, libjpeg upsamples the chroma of the outermost
  // decoded columns without their outer neighbors; a few more columns keep
  // that off the pixels that are read. Rows need no margin.
  constexpr int kColumnMargin = 4;
  Span columns = {std::max(0, plan->columns.begin - kColumnMargin),
                  std::min(width, plan->columns.end + kColumnMargin)};
  Span rows = plan->rows;
  if (!PartialDecodingIsExact(cinfo)) {
    columns = {0, width};
    rows = {0, height};
  }
  const int num_rows = rows.end - rows.begin;
  const bool to_direct = direct != nullptr && !cmyk && plan->copy && width == options.width &&
                         height == options.height;
  const size_t row_bytes = static_cast<size_t>(width) * channels;
  uint8_t* pixels = to_direct ? direct : Reserve(scratch.decoded, row_bytes * num_rows);
  if (scratch.rows.size() < static_cast<size_t>(num_rows)) {
    scratch.rows.resize(num_rows);
  }
  for (int row = 0; row < num_rows; ++row) {
    scratch.rows[row] = pixels + row * row_bytes;
  }
  JpegRows read;
  read.width = static_cast<JDIMENSION>(width);
  read.height = static_cast<JDIMENSION>(height);
  read.x0 = static_cast<JDIMENSION>(columns.begin);
  read.x1 = static_cast<JDIMENSION>(columns.end);
  read.y0 = static_cast<JDIMENSION>(rows.begin);
  read.y1 = static_cast<JDIMENSION>(rows.end);
  read.rows = scratch.rows.data();
  read.spare_row = Reserve(scratch.spare_row, row_bytes);
  if (!JpegReadRows(&decoder, &read)) return JpegError(decoder);

  const int decoded_width = static_cast<int>(read.decoded_width);
  if (cmyk) {
    for (int row = 0; row < num_rows; ++row) {
      CmykToRgbInPlace(pixels + row * row_bytes, decoded_width);
    }
  }
  out->data = pixels;
  out->width = decoded_width;
  out->height = num_rows;
  out->stride = row_bytes;
  out->x = static_cast<int>(read.x_offset);
  out->y = rows.begin;
  return absl::OkStatus();
}

absl::Status DecodeJpeg(std::string_view encoded, const ImageOptions& options, uint64_t seed,
                        uint8_t* direct, Scratch& scratch, Pixels* out, Plan* plan) {
  absl::Status status;
  if (!JpegReadHeader(&scratch.jpeg, encoded)) {
    status = JpegError(scratch.jpeg);
  } else {
    status = DecodeJpegRegion(options, seed, direct, scratch, out, plan);
  }
  // Back to idle, after an error too (it frees the image's memory and never
  // fails).
  if (scratch.jpeg.created) jpeg_abort_decompress(&scratch.jpeg.cinfo);
  return status;
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

// Decodes the whole PNG into 8-bit RGB, into `direct` (the caller's HWC
// output, or null) when the image has the output's size, else into the
// thread's scratch. Returns false with input->error set on a libpng error.
// libpng reports errors by longjmp to the setjmp below, so no object with a
// destructor may live in this frame, and nothing assigned after setjmp is
// read after the jump.
bool ReadPng(PngInput* input, const ImageOptions& options, uint8_t* direct, Scratch& scratch,
             Pixels* out) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, input, PngFail, PngWarn);
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
  const size_t row_bytes = size_t{width} * kChannels;
  if (png_get_rowbytes(png, info) != row_bytes) {
    png_error(png, "unexpected row size after conversion to RGB");
  }
  uint8_t* pixels;
  if (direct != nullptr && width == static_cast<png_uint_32>(options.width) &&
      height == static_cast<png_uint_32>(options.height)) {
    pixels = direct;
  } else {
    pixels = Reserve(scratch.decoded, row_bytes * height);
  }
  if (scratch.rows.size() < height) scratch.rows.resize(height);
  for (png_uint_32 row = 0; row < height; ++row) {
    scratch.rows[row] = pixels + row * row_bytes;
  }
  png_read_image(png, scratch.rows.data());
  // Reads up to IEND, so a file cut after the image data is an error too.
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  out->data = pixels;
  out->width = static_cast<int>(width);
  out->height = static_cast<int>(height);
  out->stride = row_bytes;
  return true;
}

// Decodes the whole PNG and plans the output from it.
absl::Status DecodePng(std::string_view encoded, const ImageOptions& options, uint64_t seed,
                       uint8_t* direct, Scratch& scratch, Pixels* out, Plan* plan) {
  PngInput input;
  input.bytes = encoded;
  // A random crop is a part of the image, never the image in place.
  if (options.resize == ResizeMode::kRandomResizedCrop) direct = nullptr;
  if (!ReadPng(&input, options, direct, scratch, out)) {
    return absl::DataLossError(absl::StrCat("PNG decode failed: ", input.error));
  }
  const int width = out->width;
  const int height = out->height;
  const CropBox box = options.resize == ResizeMode::kRandomResizedCrop
                          ? SampleRandomResizedCrop(width, height, options, seed)
                          : CropBox{0, 0, width, height};
  *plan = PlanOutput(SourceRegion(options, box, width, height, width, height), options, width,
                     height, scratch);
  return absl::OkStatus();
}

// -------------------------------------------------------------- output ----

// Writes the height x width RGB pixels at `pixels` (rows `row_bytes` apart)
// to `dst` in `layout`.
void CopyOut(const uint8_t* pixels, size_t row_bytes, int width, int height, Layout layout,
             uint8_t* dst) {
  const size_t out_row_bytes = static_cast<size_t>(width) * kChannels;
  if (layout == Layout::kHWC) {
    for (int y = 0; y < height; ++y) {
      std::memcpy(dst + y * out_row_bytes, pixels + y * row_bytes, out_row_bytes);
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

// Mirrors the width x height output in `layout` left-right, in place.
void MirrorInPlace(uint8_t* pixels, int width, int height, Layout layout) {
  if (layout == Layout::kCHW) {
    for (int row = 0; row < kChannels * height; ++row) {
      uint8_t* begin = pixels + static_cast<size_t>(row) * width;
      std::reverse(begin, begin + width);
    }
    return;
  }
  for (int row = 0; row < height; ++row) {
    uint8_t* left = pixels + static_cast<size_t>(row) * width * kChannels;
    uint8_t* right = left + static_cast<size_t>(width - 1) * kChannels;
    for (; left < right; left += kChannels, right -= kChannels) {
      std::swap_ranges(left, left + kChannels, right);
    }
  }
}

// Writes the planned output to `dst` at the output size and layout,
// mirrored left-right if `mirror`.
void Store(const Pixels& src, const Plan& plan, const ImageOptions& options, bool mirror,
           Scratch& scratch, uint8_t* dst) {
  if (src.data == dst || plan.copy) {
    if (src.data != dst) {  // else decoded in place
      CopyOut(src.data + (plan.copy_y - src.y) * src.stride + (plan.copy_x - src.x) * kChannels,
              src.stride, options.width, options.height, options.layout, dst);
    }
    if (mirror) {
      MirrorInPlace(dst, options.width, options.height, options.layout);
    }
    return;
  }
  // Resampling with the x filter reversed mirrors for free, and the
  // resampler writes either layout directly.
  if (mirror) internal_resample::MirrorAxis(&scratch.x_axis);
  internal_resample::RgbOutput out;
  out.data = dst;
  if (options.layout == Layout::kHWC) {
    out.row_stride = static_cast<size_t>(options.width) * kChannels;
  } else {
    out.planar = true;
    out.row_stride = options.width;
    out.plane_stride = static_cast<size_t>(options.width) * options.height;
  }
  internal_resample::Resample({src.data, src.stride, src.x, src.y}, scratch.x_axis, scratch.y_axis,
                              scratch.resample, out);
}

}  // namespace

CropBox SampleRandomResizedCrop(int width, int height, const ImageOptions& options, uint64_t seed) {
  if (width <= 0 || height <= 0) {
    return {0, 0, std::max(width, 0), std::max(height, 0)};
  }
  Rng rng(seed);
  const double area = static_cast<double>(width) * height;
  const double log_min_ratio = std::log(options.min_ratio);
  const double log_max_ratio = std::log(options.max_ratio);
  for (int attempt = 0; attempt < kCropAttempts; ++attempt) {
    const double target_area =
        area * (options.min_scale + (options.max_scale - options.min_scale) * UniformUnit(rng));
    const double aspect_ratio =
        std::exp(log_min_ratio + (log_max_ratio - log_min_ratio) * UniformUnit(rng));
    // Compared as doubles first, so that no out-of-range value is converted.
    const double w = RoundHalfToEven(std::sqrt(target_area * aspect_ratio));
    const double h = RoundHalfToEven(std::sqrt(target_area / aspect_ratio));
    if (0 < w && w <= width && 0 < h && h <= height) {
      CropBox box;
      box.width = static_cast<int>(w);
      box.height = static_cast<int>(h);
      // torchvision draws the top row, then the left column.
      box.y = static_cast<int>(rng.Below(height - box.height + 1));
      box.x = static_cast<int>(rng.Below(width - box.width + 1));
      return box;
    }
  }
  // Fallback to a central crop of the whole width or height, the ratio
  // clamped to the range.
  CropBox box{0, 0, width, height};
  const double in_ratio = static_cast<double>(width) / height;
  if (in_ratio < options.min_ratio) {
    box.height = static_cast<int>(
        std::clamp(RoundHalfToEven(width / options.min_ratio), 1.0, static_cast<double>(height)));
  } else if (in_ratio > options.max_ratio) {
    box.width = static_cast<int>(
        std::clamp(RoundHalfToEven(height * options.max_ratio), 1.0, static_cast<double>(width)));
  }
  box.y = (height - box.height) / 2;
  box.x = (width - box.width) / 2;
  return box;
}

bool SampleHorizontalFlip(uint64_t seed) {
  Rng rng(internal_random::DeriveSeed(seed, {kFlipStream}));
  return (rng.Next() >> 63) != 0;
}

absl::Status ValidateImageOptions(const ImageOptions& options) {
  if (options.height <= 0 || options.width <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("image size must be positive, got height ",
                                                   options.height, " and width ", options.width));
  }
  if (int64_t{options.height} * options.width > kMaxPixels) {
    return absl::InvalidArgumentError(absl::StrCat("image size ", options.height, "x",
                                                   options.width, " is too large (at most ",
                                                   kMaxPixels, " pixels)"));
  }
  if (options.resize == ResizeMode::kRandomResizedCrop) {
    // Written so that NaN fails every test.
    if (!(options.min_scale > 0 && options.min_scale <= options.max_scale &&
          std::isfinite(options.max_scale))) {
      return absl::InvalidArgumentError(
          absl::StrCat("random resized crop scale range must satisfy 0 < min <= max, got [",
                       options.min_scale, ", ", options.max_scale, "]"));
    }
    if (!(options.min_ratio > 0 && options.min_ratio <= options.max_ratio &&
          std::isfinite(options.max_ratio))) {
      return absl::InvalidArgumentError(
          absl::StrCat("random resized crop ratio range must satisfy 0 < min <= max, got [",
                       options.min_ratio, ", ", options.max_ratio, "]"));
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeImage(std::string_view encoded, const ImageOptions& options, uint64_t seed,
                         uint8_t* dst) {
  SHARDLOADER_RETURN_IF_ERROR(ValidateImageOptions(options));
  Scratch& scratch = ThreadScratch();
  uint8_t* direct = options.layout == Layout::kHWC ? dst : nullptr;
  Pixels pixels;
  Plan plan;
  absl::Status status;
  if (StartsWith(encoded, "\xFF\xD8\xFF")) {
    status = DecodeJpeg(encoded, options, seed, direct, scratch, &pixels, &plan);
  } else if (StartsWith(encoded, "\x89PNG\r\n\x1A\n")) {
    status = DecodePng(encoded, options, seed, direct, scratch, &pixels, &plan);
  } else {
    return absl::DataLossError("not a JPEG or PNG image");
  }
  if (status.ok()) {
    Store(pixels, plan, options, options.random_flip && SampleHorizontalFlip(seed), scratch, dst);
  }
  ReleaseIfHuge(scratch.decoded);
  ReleaseIfHuge(scratch.spare_row);
  scratch.resample.ReleaseIfOver(kMaxRetainedBytes);
  return status;
}

}  // namespace shardloader
