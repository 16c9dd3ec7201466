// PIL's BILINEAR resampling of 8-bit RGB images, reimplemented for the image
// decoder (internal: not part of the public API, and may change).
//
// The algorithm is Pillow's (libImaging/Resample.c, up to version 12;
// Image.resize with a box): each axis has a filter (an Axis), a triangle of
// support 1 widened by the shrink factor (antialiased), truncated at the
// edges of the pixels it may read and normalized, its weights rounded to
// 22-bit fixed point; the horizontal pass runs first, on the rows that the
// vertical pass reads, and rounds to 8 bits; then the vertical pass. A pass
// whose filter is the identity is skipped. The output is Pillow's to the
// bit for the same box (Pillow rounds its box to float32, which moves a
// few pixels by 1; Pillow 13 also runs the vertical pass first when the
// height shrinks much more than the width, which moves some by 1).
//
// On x86-64 both passes run with SSE2, or AVX2 where the processor has it
// (a block of 16 input rows is transposed so that the horizontal pass works
// on 16 rows at once, then transposed back), bit-identically to the plain
// C++ version, which runs on other targets and for outputs under 16 bytes a
// row (or a plane's row). On 224 x 224 crops of ImageNet photos the AVX2
// passes take about a sixth of the time of the plain C++ ones (a fourth
// with SSE2).
//
// Thread-safety: the functions are thread-safe; an Axis or a
// ResampleScratch is thread-compatible (one thread at a time), and the
// scratch is meant to be kept per thread, so that steady state allocates
// nothing.
#ifndef SHARDLOADER_DECODE_RESAMPLE_H_
#define SHARDLOADER_DECODE_RESAMPLE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardloader::internal_resample {

// Fixed-point precision of the filter weights: PIL's PRECISION_BITS for 8-bit
// samples. A sum of 255 times weights adding up to 1 stays below 2^31.
inline constexpr int kWeightBits = 22;

// Pixels [begin, end) of one axis.
struct Span {
  int begin = 0;
  int end = 0;
};

// The filter of one axis of a resampling: output pixel i is the weighted sum
// of the `window` input pixels from begin[i], with weights[i * taps + t]
// (some of them zero: every output pixel reads the same number of pixels,
// so that the loops have a fixed length). Built by BuildAxis.
struct Axis {
  std::vector<int> begin;
  std::vector<int32_t> weights;  // fixed point, kWeightBits
  // The weights again, for the SIMD passes: for output pixel i and pair p of
  // taps (2p, 2p + 1), pairs[(i * num_pairs + p) * 2] holds the low halves
  // as two int16 (tap 2p in the low 16 bits) and the next entry the high
  // halves, each weight being high * 2^16 + low with low in [-2^15, 2^15).
  std::vector<uint32_t> pairs;
  std::vector<double> real;  // one pixel's weights before rounding
  int taps = 0;              // room for weights per output pixel
  int window = 0;            // pixels read per output pixel, <= taps
  int num_pairs = 0;         // (window + 1) / 2
  bool identity = false;     // output pixel i is input pixel begin[0] + i

  int size() const { return static_cast<int>(begin.size()); }

  // The input pixels read.
  Span Reads() const;
};

// Computes the filter that resamples [low, high) of an axis whose pixels are
// `bounds` (low < high, bounds not empty) to `out_size` > 0 pixels: PIL's
// precompute_coeffs and normalize_coeffs_8bpc (Resample.c, BILINEAR), the
// input being `bounds`. The triangle is widened by the shrink factor,
// truncated at the bounds and normalized to sum 1. Reuses axis's memory.
void BuildAxis(double low, double high, Span bounds, int out_size, Axis* axis);

// Reverses the output order of `axis`: output pixel i becomes the former
// output pixel size - 1 - i. Resampling with a mirrored x axis gives the
// mirror image of the output, at no extra cost.
void MirrorAxis(Axis* axis);

// An RGB image in memory: rows of 3-byte pixels, `stride` bytes apart;
// `data` is the pixel with coordinates (x, y) in the axes' coordinates.
struct RgbView {
  const uint8_t* data = nullptr;
  size_t stride = 0;
  int x = 0;
  int y = 0;
};

// Where the output goes: height rows of width RGB pixels, interleaved (HWC;
// pixel x of row y at data + y * row_stride + 3 * x) or `planar` (CHW;
// channel c of pixel x of row y at data + c * plane_stride + y * row_stride
// + x).
struct RgbOutput {
  uint8_t* data = nullptr;
  size_t row_stride = 0;
  size_t plane_stride = 0;  // planar only
  bool planar = false;
};

// Buffers reused across calls.
struct ResampleScratch {
  std::vector<uint8_t> horizontal;   // rows after the horizontal pass
  std::vector<uint8_t> block;        // transposed blocks of 16 rows
  std::vector<int32_t> sums;         // a row of sums (portable code)
  std::vector<uint8_t> interleaved;  // output before the split into planes
  Axis x_axis;                       // an identity x filter, made explicit

  // Frees buffers that an unusually large image grew past `max_bytes`.
  void ReleaseIfOver(size_t max_bytes);
};

// The instruction sets that the passes can use, in increasing order.
enum class Simd {
  kNone,  // plain C++
  kSse2,  // x86-64 (all of it)
  kAvx2,  // x86-64 processors with AVX2, detected at run time
};

// The best of Simd that this build and this processor support.
Simd BestSimd();

// Resamples `src` with the filters `x` and `y` (every pixel they read must
// be inside `src`) to x.size() x y.size() RGB pixels at `dst` (which must not
// overlap `src`). With SIMD, the output's layout costs nothing: the
// horizontal pass writes its rows in the output's channel order. Uses
// BestSimd().
void Resample(const RgbView& src, const Axis& x, const Axis& y, ResampleScratch& scratch,
              const RgbOutput& dst);

// The same with at most the instruction set `simd` (for tests and
// benchmarks: the output does not depend on it).
void ResampleWith(Simd simd, const RgbView& src, const Axis& x, const Axis& y,
                  ResampleScratch& scratch, const RgbOutput& dst);

}  // namespace shardloader::internal_resample

#endif  // SHARDLOADER_DECODE_RESAMPLE_H_
