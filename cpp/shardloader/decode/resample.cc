#include "shardloader/decode/resample.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#define SHARDLOADER_RESAMPLE_SSE2 1
#if defined(__GNUC__) && defined(__x86_64__)
// AVX2 versions of the kernels, compiled with the target attribute and
// chosen at run time.
#include <immintrin.h>
#define SHARDLOADER_RESAMPLE_AVX2 1
#define SHARDLOADER_TARGET_AVX2 __attribute__((target("avx2")))
#endif
#endif

namespace shardloader::internal_resample {
namespace {

constexpr int kChannels = 3;

// The rounding half that every weighted sum starts from.
constexpr int32_t kHalf = int32_t{1} << (kWeightBits - 1);

// PIL's bilinear filter: a triangle of support 1.
double Triangle(double x) {
  x = std::abs(x);
  return x < 1 ? 1 - x : 0;
}

// A weighted sum back to 8 bits (the sum includes the rounding half).
uint8_t Clip8(int32_t sum) { return static_cast<uint8_t>(std::clamp(sum >> kWeightBits, 0, 255)); }

template <typename T>
T* Reserve(std::vector<T>& buffer, size_t size) {
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

template <typename T>
void FreeIfOver(std::vector<T>& buffer, size_t max_bytes) {
  if (buffer.capacity() * sizeof(T) > max_bytes) std::vector<T>().swap(buffer);
}

// Fills axis->pairs and axis->num_pairs from axis->weights.
void PackPairs(Axis* axis) {
  const int num_pairs = (axis->window + 1) / 2;
  axis->num_pairs = num_pairs;
  axis->pairs.assign(static_cast<size_t>(axis->size()) * num_pairs * 2, 0);
  for (int i = 0; i < axis->size(); ++i) {
    const int32_t* weights = &axis->weights[static_cast<size_t>(i) * axis->taps];
    uint32_t* pairs = &axis->pairs[static_cast<size_t>(i) * num_pairs * 2];
    for (int t = 0; t < axis->window; ++t) {
      // weight = high * 2^16 + low, low in [-2^15, 2^15): both fit int16.
      const int32_t low = static_cast<int16_t>(weights[t] & 0xFFFF);
      const int32_t high = (weights[t] - low) >> 16;
      const int shift = 16 * (t % 2);
      pairs[(t / 2) * 2] |= uint32_t{static_cast<uint16_t>(low)} << shift;
      pairs[(t / 2) * 2 + 1] |= uint32_t{static_cast<uint16_t>(high)} << shift;
    }
  }
}

// ----------------------------------------------------------- portable ----

// The vertical pass works on rows in blocks of this many bytes: loops of a
// fixed length over __restrict pointers are what GCC vectorizes at -O2.
constexpr size_t kBlockBytes = 16;

void AccumulateBlock(int32_t* __restrict sums, const uint8_t* __restrict row, int32_t weight) {
  for (size_t j = 0; j < kBlockBytes; ++j) sums[j] += row[j] * weight;
}

void ClipBlock(const int32_t* __restrict sums, uint8_t* __restrict out) {
  for (size_t j = 0; j < kBlockBytes; ++j) out[j] = Clip8(sums[j]);
}

// sums[j] += row[j] * weight for j < size.
void AccumulateRow(int32_t* sums, const uint8_t* row, int32_t weight, size_t size) {
  size_t j = 0;
  for (; j + kBlockBytes <= size; j += kBlockBytes) {
    AccumulateBlock(sums + j, row + j, weight);
  }
  for (; j < size; ++j) sums[j] += row[j] * weight;
}

// out[j] = Clip8(sums[j]) for j < size.
void ClipRow(const int32_t* sums, uint8_t* out, size_t size) {
  size_t j = 0;
  for (; j + kBlockBytes <= size; j += kBlockBytes) {
    ClipBlock(sums + j, out + j);
  }
  for (; j < size; ++j) out[j] = Clip8(sums[j]);
}

// One row of the horizontal pass: x.size() RGB pixels from `in`, whose
// first pixel is pixel `origin` of the axis. kWindow > 0 fixes the number
// of pixels read per output pixel (the loop is then unrolled); 0 reads
// x.window.
template <int kWindow>
void HorizontalRow(const uint8_t* in, int origin, const Axis& x, uint8_t* out) {
  const int window = kWindow > 0 ? kWindow : x.window;
  for (int i = 0; i < x.size(); ++i, out += kChannels) {
    const uint8_t* p = in + (x.begin[i] - origin) * kChannels;
    const int32_t* weights = &x.weights[static_cast<size_t>(i) * x.taps];
    int32_t red = kHalf;
    int32_t green = kHalf;
    int32_t blue = kHalf;
    for (int t = 0; t < window; ++t, p += kChannels) {
      red += p[0] * weights[t];
      green += p[1] * weights[t];
      blue += p[2] * weights[t];
    }
    out[0] = Clip8(red);
    out[1] = Clip8(green);
    out[2] = Clip8(blue);
  }
}

// The horizontal pass over rows [rows.begin, rows.end) of `src`, to rows
// `out_stride` bytes apart from `out`.
void HorizontalPortable(const RgbView& src, const Axis& x, Span rows, uint8_t* out,
                        size_t out_stride) {
  auto* resample_row = &HorizontalRow<0>;
  switch (x.window) {
    case 2:
      resample_row = &HorizontalRow<2>;
      break;
    case 3:
      resample_row = &HorizontalRow<3>;
      break;
    case 4:
      resample_row = &HorizontalRow<4>;
      break;
    case 5:
      resample_row = &HorizontalRow<5>;
      break;
    case 6:
      resample_row = &HorizontalRow<6>;
      break;
  }
  for (int row = rows.begin; row < rows.end; ++row) {
    resample_row(src.data + (row - src.y) * src.stride, src.x, x,
                 out + (row - rows.begin) * out_stride);
  }
}

// The vertical pass: `in` is input row `first_row`, the rows `in_stride`
// bytes apart and `row_bytes` long.
void VerticalPortable(const uint8_t* in, size_t in_stride, int first_row, const Axis& y,
                      size_t row_bytes, ResampleScratch& scratch, uint8_t* dst, size_t dst_stride) {
  int32_t* sums = Reserve(scratch.sums, row_bytes);
  for (int i = 0; i < y.size(); ++i) {
    std::fill(sums, sums + row_bytes, kHalf);
    const int32_t* weights = &y.weights[static_cast<size_t>(i) * y.taps];
    const uint8_t* row = in + (y.begin[i] - first_row) * in_stride;
    for (int t = 0; t < y.window; ++t, row += in_stride) {
      AccumulateRow(sums, row, weights[t], row_bytes);
    }
    ClipRow(sums, dst + i * dst_stride, row_bytes);
  }
}

// Split into planes: the width x height interleaved pixels at `in` (rows
// `in_stride` bytes apart) to `dst`.
void Deinterleave(const uint8_t* in, size_t in_stride, int width, int height,
                  const RgbOutput& dst) {
  for (int y = 0; y < height; ++y, in += in_stride) {
    uint8_t* red = dst.data + y * dst.row_stride;
    uint8_t* green = red + dst.plane_stride;
    uint8_t* blue = green + dst.plane_stride;
    for (int x = 0; x < width; ++x) {
      red[x] = in[kChannels * x];
      green[x] = in[kChannels * x + 1];
      blue[x] = in[kChannels * x + 2];
    }
  }
}

// `out`: an identity filter `x` as an explicit filter of one tap.
void MakeExplicit(const Axis& x, Axis* out) {
  const int first = x.begin[0];
  out->identity = false;
  out->taps = 1;
  out->window = 1;
  out->begin.resize(x.size());
  for (int i = 0; i < x.size(); ++i) out->begin[i] = first + i;
  out->weights.assign(x.size(), int32_t{1} << kWeightBits);
  PackPairs(out);
}

// Rows of output of a pass: row r's segment s (of num_segments, each
// segment_bytes long) is at data + r * row_stride + s * segment_stride.
// Interleaved rows are one segment of 3 * width bytes; planar rows are
// three, one per channel, of width bytes.
struct Rows {
  uint8_t* data = nullptr;
  size_t row_stride = 0;
  size_t segment_stride = 0;
  size_t segment_bytes = 0;
  int num_segments = 1;
};

// --------------------------------------------------------------- SIMD ----
//
// Both passes compute 16 weighted sums at once, exactly as the portable
// code: 16 bytes of two taps are interleaved and widened to 16-bit pairs,
// which _mm_madd_epi16 multiplies by a pair of 16-bit halves of the two
// weights and adds. The low and high halves are summed apart, and combined
// as high * 2^16 + low in 32-bit lanes (wrapping, so exact whenever the
// true sum fits, which it does: it is at most about 255 * 2^22).
//
// The vertical pass reads 16 consecutive bytes of a row. The horizontal
// pass reads, for one output byte, 16 rows: it works on blocks of 16 rows,
// transposed so that byte k of the 16 rows is 16 consecutive bytes, and
// transposes its result back, in the output's channel order.
//
// Where the processor has AVX2 (checked once), the same arithmetic runs on
// 256-bit registers: 32 bytes of a row in the vertical pass, and in the
// horizontal pass the 16 rows widened to 16-bit pairs in one register.
// Without it, the SSE2 code runs (x86-64 always has SSE2).

#if SHARDLOADER_RESAMPLE_SSE2

// The 16 rows of bytes in v become its 16 columns: byte c of v[r] becomes
// byte r of v[c].
inline void Transpose16x16(__m128i v[16]) {
  __m128i s[16];
  for (int i = 0; i < 8; ++i) {  // 16-bit units: rows 2i, 2i + 1
    s[i] = _mm_unpacklo_epi8(v[2 * i], v[2 * i + 1]);
    s[i + 8] = _mm_unpackhi_epi8(v[2 * i], v[2 * i + 1]);
  }
  for (int h = 0; h < 16; h += 8) {  // 32-bit units: rows 4i to 4i + 3
    for (int i = 0; i < 4; ++i) {
      v[h + i] = _mm_unpacklo_epi16(s[h + 2 * i], s[h + 2 * i + 1]);
      v[h + 4 + i] = _mm_unpackhi_epi16(s[h + 2 * i], s[h + 2 * i + 1]);
    }
  }
  for (int q = 0; q < 16; q += 4) {  // 64-bit units: rows 8i to 8i + 7
    for (int i = 0; i < 2; ++i) {
      s[q + i] = _mm_unpacklo_epi32(v[q + 2 * i], v[q + 2 * i + 1]);
      s[q + 2 + i] = _mm_unpackhi_epi32(v[q + 2 * i], v[q + 2 * i + 1]);
    }
  }
  for (int q = 0; q < 16; q += 2) {  // all 16 rows
    v[q] = _mm_unpacklo_epi64(s[q], s[q + 1]);
    v[q + 1] = _mm_unpackhi_epi64(s[q], s[q + 1]);
  }
}

inline __m128i Load(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

inline void Store(uint8_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }

// 16 weighted sums: low[k] and high[k] hold sums 4k to 4k + 3.
struct Sums {
  __m128i low[4];
  __m128i high[4];

  Sums() {
    for (int k = 0; k < 4; ++k) {
      low[k] = _mm_set1_epi32(kHalf);
      high[k] = _mm_setzero_si128();
    }
  }

  // Adds a * weight_a + b * weight_b bytewise, the weights' low halves
  // paired in `low_pair` and their high halves in `high_pair`.
  void Add(__m128i a, __m128i b, __m128i low_pair, __m128i high_pair) {
    const __m128i zero = _mm_setzero_si128();
    const __m128i first = _mm_unpacklo_epi8(a, b);
    const __m128i second = _mm_unpackhi_epi8(a, b);
    const __m128i pairs[4] = {_mm_unpacklo_epi8(first, zero), _mm_unpackhi_epi8(first, zero),
                              _mm_unpacklo_epi8(second, zero), _mm_unpackhi_epi8(second, zero)};
    for (int k = 0; k < 4; ++k) {
      low[k] = _mm_add_epi32(low[k], _mm_madd_epi16(pairs[k], low_pair));
      high[k] = _mm_add_epi32(high[k], _mm_madd_epi16(pairs[k], high_pair));
    }
  }

  // The 16 sums back to 8 bits, clamped to [0, 255] as Clip8.
  __m128i Bytes() const {
    __m128i out[4];
    for (int k = 0; k < 4; ++k) {
      out[k] = _mm_srai_epi32(_mm_add_epi32(_mm_slli_epi32(high[k], 16), low[k]), kWeightBits);
    }
    return _mm_packus_epi16(_mm_packs_epi32(out[0], out[1]), _mm_packs_epi32(out[2], out[3]));
  }
};

// The pairs of weights p of one output pixel, broadcast.
inline __m128i LowPair(const uint32_t* pairs, int p) {
  return _mm_set1_epi32(static_cast<int32_t>(pairs[2 * p]));
}
inline __m128i HighPair(const uint32_t* pairs, int p) {
  return _mm_set1_epi32(static_cast<int32_t>(pairs[2 * p + 1]));
}

// Transposes bytes [0, size) (size >= 16) of the 16 rows to
// columns[k * 16 + r] = rows[r][k].
void TransposeToColumns(const uint8_t* const rows[16], size_t size, uint8_t* columns) {
  for (size_t k = 0;; k += 16) {
    k = std::min(k, size - 16);  // the last block overlaps the one before
    __m128i v[16];
    for (int r = 0; r < 16; ++r) v[r] = Load(rows[r] + k);
    Transpose16x16(v);
    for (int c = 0; c < 16; ++c) Store(columns + (k + c) * 16, v[c]);
    if (k + 16 == size) return;
  }
}

// The inverse: rows[r][k] = columns[k * 16 + r] for k < size (>= 16).
void TransposeToRows(const uint8_t* columns, size_t size, uint8_t* const rows[16]) {
  for (size_t k = 0;; k += 16) {
    k = std::min(k, size - 16);
    __m128i v[16];
    for (int c = 0; c < 16; ++c) v[c] = Load(columns + (k + c) * 16);
    Transpose16x16(v);
    for (int r = 0; r < 16; ++r) Store(rows[r] + k, v[r]);
    if (k + 16 == size) return;
  }
}

// The horizontal pass on a transposed block of 16 rows: `columns` holds the
// bytes of the pixels from `first` on, 16 rows per byte, and 3 more zero
// columns (read with a weight of zero when the window is odd); writes the
// 16 rows of channel c of output pixel i at out[(i * pixel_step + c *
// channel_step) * 16]. kPairs > 0 fixes x.num_pairs.
template <int kPairs>
void HorizontalBlock(const uint8_t* columns, const Axis& x, int first, size_t pixel_step,
                     size_t channel_step, uint8_t* out) {
  const int num_pairs = kPairs > 0 ? kPairs : x.num_pairs;
  for (int i = 0; i < x.size(); ++i) {
    const uint8_t* pixel = columns + static_cast<size_t>(x.begin[i] - first) * kChannels * 16;
    const uint32_t* pairs = &x.pairs[static_cast<size_t>(i) * num_pairs * 2];
    for (int c = 0; c < kChannels; ++c) {
      Sums sums;
      for (int p = 0; p < num_pairs; ++p) {
        // Taps 2p and 2p + 1 of channel c, 3 bytes apart.
        const uint8_t* tap = pixel + (2 * p * kChannels + c) * 16;
        sums.Add(Load(tap), Load(tap + kChannels * 16), LowPair(pairs, p), HighPair(pairs, p));
      }
      Store(out + (i * pixel_step + c * channel_step) * 16, sums.Bytes());
    }
  }
}

#if SHARDLOADER_RESAMPLE_AVX2

// The 8 sums in (high, low) back to 8 bits, as 16-bit lanes, unclamped.
SHARDLOADER_TARGET_AVX2 inline __m256i Finish(__m256i high, __m256i low) {
  return _mm256_srai_epi32(_mm256_add_epi32(_mm256_slli_epi32(high, 16), low), kWeightBits);
}

// As Sums, for 16 bytes widened to 16-bit pairs in one 256-bit register:
// low[k] and high[k] hold sums 8k to 8k + 7.
struct Sums16Avx2 {
  __m256i low[2];
  __m256i high[2];

  SHARDLOADER_TARGET_AVX2 Sums16Avx2() {
    for (int k = 0; k < 2; ++k) {
      low[k] = _mm256_set1_epi32(kHalf);
      high[k] = _mm256_setzero_si256();
    }
  }

  SHARDLOADER_TARGET_AVX2 void Add(__m128i a, __m128i b, __m256i low_pair, __m256i high_pair) {
    const __m256i pairs[2] = {_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b)),
                              _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, b))};
    for (int k = 0; k < 2; ++k) {
      low[k] = _mm256_add_epi32(low[k], _mm256_madd_epi16(pairs[k], low_pair));
      high[k] = _mm256_add_epi32(high[k], _mm256_madd_epi16(pairs[k], high_pair));
    }
  }

  SHARDLOADER_TARGET_AVX2 __m128i Bytes() const {
    // 16-bit sums 0-3 and 8-11 in the low half, 4-7 and 12-15 in the high.
    const __m256i words = _mm256_packs_epi32(Finish(high[0], low[0]), Finish(high[1], low[1]));
    const __m128i bytes =
        _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
    return _mm_shuffle_epi32(bytes, _MM_SHUFFLE(3, 1, 2, 0));
  }
};

// As Sums, for 32 bytes: the 256-bit instructions work on each 128-bit half
// as the SSE2 ones on the whole, so the halves come back in order.
struct Sums32Avx2 {
  __m256i low[4];
  __m256i high[4];

  SHARDLOADER_TARGET_AVX2 Sums32Avx2() {
    for (int k = 0; k < 4; ++k) {
      low[k] = _mm256_set1_epi32(kHalf);
      high[k] = _mm256_setzero_si256();
    }
  }

  SHARDLOADER_TARGET_AVX2 void Add(__m256i a, __m256i b, __m256i low_pair, __m256i high_pair) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i first = _mm256_unpacklo_epi8(a, b);
    const __m256i second = _mm256_unpackhi_epi8(a, b);
    const __m256i pairs[4] = {_mm256_unpacklo_epi8(first, zero), _mm256_unpackhi_epi8(first, zero),
                              _mm256_unpacklo_epi8(second, zero),
                              _mm256_unpackhi_epi8(second, zero)};
    for (int k = 0; k < 4; ++k) {
      low[k] = _mm256_add_epi32(low[k], _mm256_madd_epi16(pairs[k], low_pair));
      high[k] = _mm256_add_epi32(high[k], _mm256_madd_epi16(pairs[k], high_pair));
    }
  }

  SHARDLOADER_TARGET_AVX2 __m256i Bytes() const {
    return _mm256_packus_epi16(
        _mm256_packs_epi32(Finish(high[0], low[0]), Finish(high[1], low[1])),
        _mm256_packs_epi32(Finish(high[2], low[2]), Finish(high[3], low[3])));
  }
};

// Transpose16x16 on each 128-bit half of v.
SHARDLOADER_TARGET_AVX2 inline void Transpose16x16Avx2(__m256i v[16]) {
  __m256i s[16];
  for (int i = 0; i < 8; ++i) {
    s[i] = _mm256_unpacklo_epi8(v[2 * i], v[2 * i + 1]);
    s[i + 8] = _mm256_unpackhi_epi8(v[2 * i], v[2 * i + 1]);
  }
  for (int h = 0; h < 16; h += 8) {
    for (int i = 0; i < 4; ++i) {
      v[h + i] = _mm256_unpacklo_epi16(s[h + 2 * i], s[h + 2 * i + 1]);
      v[h + 4 + i] = _mm256_unpackhi_epi16(s[h + 2 * i], s[h + 2 * i + 1]);
    }
  }
  for (int q = 0; q < 16; q += 4) {
    for (int i = 0; i < 2; ++i) {
      s[q + i] = _mm256_unpacklo_epi32(v[q + 2 * i], v[q + 2 * i + 1]);
      s[q + 2 + i] = _mm256_unpackhi_epi32(v[q + 2 * i], v[q + 2 * i + 1]);
    }
  }
  for (int q = 0; q < 16; q += 2) {
    v[q] = _mm256_unpacklo_epi64(s[q], s[q + 1]);
    v[q + 1] = _mm256_unpackhi_epi64(s[q], s[q + 1]);
  }
}

// TransposeToColumns with AVX2, 32 bytes of the rows at a time (two blocks
// of 16, one per half of the registers), for size >= 32.
SHARDLOADER_TARGET_AVX2 void TransposeToColumnsAvx2(const uint8_t* const rows[16], size_t size,
                                                    uint8_t* columns) {
  for (size_t k = 0;; k += 32) {
    k = std::min(k, size - 32);
    __m256i v[16];
    for (int r = 0; r < 16; ++r) {
      v[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + k));
    }
    Transpose16x16Avx2(v);
    for (int c = 0; c < 16; ++c) {
      Store(columns + (k + c) * 16, _mm256_castsi256_si128(v[c]));
      Store(columns + (k + 16 + c) * 16, _mm256_extracti128_si256(v[c], 1));
    }
    if (k + 32 == size) return;
  }
}

// TransposeToRows with AVX2, for size >= 32.
SHARDLOADER_TARGET_AVX2 void TransposeToRowsAvx2(const uint8_t* columns, size_t size,
                                                 uint8_t* const rows[16]) {
  for (size_t k = 0;; k += 32) {
    k = std::min(k, size - 32);
    __m256i v[16];
    for (int c = 0; c < 16; ++c) {
      v[c] = _mm256_inserti128_si256(_mm256_castsi128_si256(Load(columns + (k + c) * 16)),
                                     Load(columns + (k + 16 + c) * 16), 1);
    }
    Transpose16x16Avx2(v);
    for (int r = 0; r < 16; ++r) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(rows[r] + k), v[r]);
    }
    if (k + 32 == size) return;
  }
}

// HorizontalBlock with AVX2.
template <int kPairs>
SHARDLOADER_TARGET_AVX2 void HorizontalBlockAvx2(const uint8_t* columns, const Axis& x, int first,
                                                 size_t pixel_step, size_t channel_step,
                                                 uint8_t* out) {
  const int num_pairs = kPairs > 0 ? kPairs : x.num_pairs;
  for (int i = 0; i < x.size(); ++i) {
    const uint8_t* pixel = columns + static_cast<size_t>(x.begin[i] - first) * kChannels * 16;
    const uint32_t* pairs = &x.pairs[static_cast<size_t>(i) * num_pairs * 2];
    for (int c = 0; c < kChannels; ++c) {
      Sums16Avx2 sums;
      for (int p = 0; p < num_pairs; ++p) {
        const uint8_t* tap = pixel + (2 * p * kChannels + c) * 16;
        sums.Add(Load(tap), Load(tap + kChannels * 16),
                 _mm256_set1_epi32(static_cast<int32_t>(pairs[2 * p])),
                 _mm256_set1_epi32(static_cast<int32_t>(pairs[2 * p + 1])));
      }
      Store(out + (i * pixel_step + c * channel_step) * 16, sums.Bytes());
    }
  }
}

// VerticalRow with AVX2, for size >= 32.
template <int kPairs>
SHARDLOADER_TARGET_AVX2 void VerticalRowAvx2(const uint8_t* in, size_t in_stride, const Axis& y,
                                             int i, size_t size, uint8_t* out) {
  const int num_pairs = kPairs > 0 ? kPairs : y.num_pairs;
  const uint32_t* pairs = &y.pairs[static_cast<size_t>(i) * num_pairs * 2];
  const size_t last_row = y.window % 2 == 0 ? y.window - 1 : 0;
  __m256i low_pairs[kPairs > 0 ? kPairs : 1];
  __m256i high_pairs[kPairs > 0 ? kPairs : 1];
  for (int p = 0; p < kPairs; ++p) {
    low_pairs[p] = _mm256_set1_epi32(static_cast<int32_t>(pairs[2 * p]));
    high_pairs[p] = _mm256_set1_epi32(static_cast<int32_t>(pairs[2 * p + 1]));
  }
  for (size_t j = 0;; j += 32) {
    j = std::min(j, size - 32);  // the last block overlaps the one before
    Sums32Avx2 sums;
    const uint8_t* tap = in + j;
    for (int p = 0; p < num_pairs; ++p, tap += 2 * in_stride) {
      const uint8_t* next = p == num_pairs - 1 ? in + j + last_row * in_stride : tap + in_stride;
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tap));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(next));
      if constexpr (kPairs > 0) {
        sums.Add(a, b, low_pairs[p], high_pairs[p]);
      } else {
        sums.Add(a, b, _mm256_set1_epi32(static_cast<int32_t>(pairs[2 * p])),
                 _mm256_set1_epi32(static_cast<int32_t>(pairs[2 * p + 1])));
      }
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), sums.Bytes());
    if (j + 32 == size) return;
  }
}

#endif  // SHARDLOADER_RESAMPLE_AVX2

// HorizontalPortable with SSE2, or AVX2 if `avx2`, for out.segment_bytes >=
// 16 and an input of at least 16 bytes a row (x.Reads()).
void HorizontalSimd(const RgbView& src, const Axis& x, Span rows, bool avx2,
                    ResampleScratch& scratch, const Rows& out) {
  const Span columns = x.Reads();
  const size_t in_bytes = static_cast<size_t>(columns.end - columns.begin) * kChannels;
  const size_t out_bytes = static_cast<size_t>(x.size()) * kChannels;
  // The transposed input (and 3 zero columns), the transposed output and a
  // segment for the output of rows past the end.
  const size_t in_block = (in_bytes + kChannels) * 16;
  const size_t out_block = out_bytes * 16;
  uint8_t* transposed_in = Reserve(scratch.block, in_block + out_block + out.segment_bytes);
  uint8_t* transposed_out = transposed_in + in_block;
  uint8_t* spare = transposed_out + out_block;
  std::memset(transposed_in + in_bytes * 16, 0, kChannels * 16);
  // Output byte order: channel c of pixel i is byte i * pixel_step + c *
  // channel_step of a row.
  const bool planar = out.num_segments == kChannels;
  const size_t pixel_step = planar ? 1 : kChannels;
  const size_t channel_step = planar ? x.size() : 1;

  auto* block = &HorizontalBlock<0>;
  switch (x.num_pairs) {
    case 1:
      block = &HorizontalBlock<1>;
      break;
    case 2:
      block = &HorizontalBlock<2>;
      break;
    case 3:
      block = &HorizontalBlock<3>;
      break;
  }
  auto* to_columns = &TransposeToColumns;
  auto* to_rows = &TransposeToRows;
#if SHARDLOADER_RESAMPLE_AVX2
  if (avx2 && in_bytes >= 32) to_columns = &TransposeToColumnsAvx2;
  if (avx2 && out.segment_bytes >= 32) to_rows = &TransposeToRowsAvx2;
  if (avx2) {
    block = &HorizontalBlockAvx2<0>;
    switch (x.num_pairs) {
      case 1:
        block = &HorizontalBlockAvx2<1>;
        break;
      case 2:
        block = &HorizontalBlockAvx2<2>;
        break;
      case 3:
        block = &HorizontalBlockAvx2<3>;
        break;
    }
  }
#endif
  const uint8_t* in =
      src.data + (rows.begin - src.y) * src.stride + (columns.begin - src.x) * kChannels;
  const int num_rows = rows.end - rows.begin;
  for (int first_row = 0; first_row < num_rows; first_row += 16) {
    const uint8_t* in_rows[16];
    for (int r = 0; r < 16; ++r) {
      // Past the end: the last row again, its output thrown away.
      in_rows[r] = in + std::min(first_row + r, num_rows - 1) * src.stride;
    }
    to_columns(in_rows, in_bytes, transposed_in);
    block(transposed_in, x, columns.begin, pixel_step, channel_step, transposed_out);
    for (int s = 0; s < out.num_segments; ++s) {
      uint8_t* out_rows[16];
      for (int r = 0; r < 16; ++r) {
        const int row = first_row + r;
        out_rows[r] =
            row < num_rows ? out.data + row * out.row_stride + s * out.segment_stride : spare;
      }
      to_rows(transposed_out + s * out.segment_bytes * 16, out.segment_bytes, out_rows);
    }
  }
}

// Bytes [0, size) (size >= 16) of one output row of the vertical pass: `in`
// is the first row read, the rows `in_stride` bytes apart. kPairs > 0 fixes
// y.num_pairs.
template <int kPairs>
void VerticalRow(const uint8_t* in, size_t in_stride, const Axis& y, int i, size_t size,
                 uint8_t* out) {
  const int num_pairs = kPairs > 0 ? kPairs : y.num_pairs;
  const uint32_t* pairs = &y.pairs[static_cast<size_t>(i) * num_pairs * 2];
  // An odd window's last pair reads the first row again, with weight zero.
  const size_t last_row = y.window % 2 == 0 ? y.window - 1 : 0;
  __m128i low_pairs[kPairs > 0 ? kPairs : 1];
  __m128i high_pairs[kPairs > 0 ? kPairs : 1];
  if constexpr (kPairs > 0) {
    for (int p = 0; p < kPairs; ++p) {
      low_pairs[p] = LowPair(pairs, p);
      high_pairs[p] = HighPair(pairs, p);
    }
  }
  for (size_t j = 0;; j += 16) {
    j = std::min(j, size - 16);  // the last block overlaps the one before
    Sums sums;
    const uint8_t* tap = in + j;
    for (int p = 0; p < num_pairs; ++p, tap += 2 * in_stride) {
      const uint8_t* next = p == num_pairs - 1 ? in + j + last_row * in_stride : tap + in_stride;
      if constexpr (kPairs > 0) {
        sums.Add(Load(tap), Load(next), low_pairs[p], high_pairs[p]);
      } else {
        sums.Add(Load(tap), Load(next), LowPair(pairs, p), HighPair(pairs, p));
      }
    }
    Store(out + j, sums.Bytes());
    if (j + 16 == size) return;
  }
}

// VerticalPortable with SSE2, or AVX2 if `avx2`, for out.segment_bytes >=
// 16; the input rows hold the segments one after the other.
void VerticalSimd(const uint8_t* in, size_t in_stride, int first_row, const Axis& y, bool avx2,
                  const Rows& out) {
  auto* row = &VerticalRow<0>;
  switch (y.num_pairs) {
    case 1:
      row = &VerticalRow<1>;
      break;
    case 2:
      row = &VerticalRow<2>;
      break;
    case 3:
      row = &VerticalRow<3>;
      break;
  }
#if SHARDLOADER_RESAMPLE_AVX2
  if (avx2 && out.segment_bytes >= 32) {
    row = &VerticalRowAvx2<0>;
    switch (y.num_pairs) {
      case 1:
        row = &VerticalRowAvx2<1>;
        break;
      case 2:
        row = &VerticalRowAvx2<2>;
        break;
      case 3:
        row = &VerticalRowAvx2<3>;
        break;
    }
  }
#endif
  for (int i = 0; i < y.size(); ++i) {
    const uint8_t* first = in + (y.begin[i] - first_row) * in_stride;
    for (int s = 0; s < out.num_segments; ++s) {
      row(first + s * out.segment_bytes, in_stride, y, i, out.segment_bytes,
          out.data + i * out.row_stride + s * out.segment_stride);
    }
  }
}

#endif  // SHARDLOADER_RESAMPLE_SSE2

void ResampleImpl(Simd simd, const RgbView& src, const Axis& x, const Axis& y,
                  ResampleScratch& scratch, const RgbOutput& dst) {
  const int width = x.size();
  const int height = y.size();
  const size_t row_bytes = static_cast<size_t>(width) * kChannels;
  // The output as rows of segments (one per channel if planar).
  Rows out;
  out.data = dst.data;
  out.row_stride = dst.row_stride;
  out.segment_stride = dst.plane_stride;
  out.segment_bytes = dst.planar ? width : row_bytes;
  out.num_segments = dst.planar ? kChannels : 1;
  // (simd is at most what this build supports.)
  bool use_simd = simd >= Simd::kSse2 && out.segment_bytes >= 16;
  [[maybe_unused]] const bool avx2 = simd >= Simd::kAvx2;
  const Axis* x_axis = &x;
  if (use_simd && dst.planar && x.identity) {
    // The horizontal pass orders the channels.
    MakeExplicit(x, &scratch.x_axis);
    x_axis = &scratch.x_axis;
  }
  if (use_simd && !x_axis->identity) {
    const Span columns = x_axis->Reads();
    use_simd = (columns.end - columns.begin) * kChannels >= 16;
  }
  if (dst.planar && !use_simd) {
    uint8_t* interleaved = Reserve(scratch.interleaved, row_bytes * height);
    ResampleImpl(Simd::kNone, src, x, y, scratch, RgbOutput{interleaved, row_bytes});
    Deinterleave(interleaved, row_bytes, width, height, dst);
    return;
  }
  // Here the output is interleaved, or planar with SSE2 and a horizontal
  // pass. The input rows that the vertical pass reads:
  const Span rows = y.identity ? Span{y.begin[0], y.begin[0] + height} : y.Reads();
  const uint8_t* horizontal;  // input row rows.begin after the horizontal pass
  size_t horizontal_stride;
  if (x_axis->identity) {
    horizontal = src.data + (rows.begin - src.y) * src.stride + (x.begin[0] - src.x) * kChannels;
    horizontal_stride = src.stride;
  } else {
    // Straight to the output when there is no vertical pass.
    Rows pass = out;
    if (!y.identity) {
      pass.data = Reserve(scratch.horizontal, row_bytes * (rows.end - rows.begin));
      pass.row_stride = row_bytes;
      pass.segment_stride = out.segment_bytes;
    }
#if SHARDLOADER_RESAMPLE_SSE2
    if (use_simd) {
      HorizontalSimd(src, *x_axis, rows, avx2, scratch, pass);
    } else {
      HorizontalPortable(src, *x_axis, rows, pass.data, pass.row_stride);
    }
#else
    HorizontalPortable(src, *x_axis, rows, pass.data, pass.row_stride);
#endif
    if (y.identity) return;
    horizontal = pass.data;
    horizontal_stride = pass.row_stride;
  }
  if (y.identity) {  // and the output interleaved
    for (int i = 0; i < height; ++i) {
      std::memcpy(dst.data + i * dst.row_stride, horizontal + i * horizontal_stride, row_bytes);
    }
    return;
  }
#if SHARDLOADER_RESAMPLE_SSE2
  if (use_simd) {
    VerticalSimd(horizontal, horizontal_stride, rows.begin, y, avx2, out);
    return;
  }
#endif
  VerticalPortable(horizontal, horizontal_stride, rows.begin, y, row_bytes, scratch, dst.data,
                   dst.row_stride);
}

}  // namespace

Span Axis::Reads() const {
  Span span{begin.front(), begin.front() + window};
  for (const int first : begin) {
    span.begin = std::min(span.begin, first);
    span.end = std::max(span.end, first + window);
  }
  return span;
}

void BuildAxis(double low, double high, Span bounds, int out_size, Axis* axis) {
  const double scale = (high - low) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_scale;  // the triangle's support is 1
  const double inverse_filter_scale = 1.0 / filter_scale;
  const int taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  const int in_size = bounds.end - bounds.begin;
  const double in0 = low - bounds.begin;
  axis->taps = taps;
  axis->window = 1;
  axis->identity = scale == 1 && low == std::floor(low);
  axis->begin.resize(out_size);
  axis->weights.assign(static_cast<size_t>(out_size) * taps, 0);
  axis->real.resize(taps);
  for (int i = 0; i < out_size; ++i) {
    const double center = in0 + (i + 0.5) * scale;
    // Truncated toward zero, then clamped, as in PIL.
    const int first = std::max(static_cast<int>(center - support + 0.5), 0);
    const int end = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int count = std::clamp(end - first, 0, taps);
    double total = 0;
    for (int t = 0; t < count; ++t) {
      axis->real[t] = Triangle((t + first - center + 0.5) * inverse_filter_scale);
      total += axis->real[t];
    }
    int32_t* weights = &axis->weights[static_cast<size_t>(i) * taps];
    for (int t = 0; t < count; ++t) {
      const double weight = total != 0 ? axis->real[t] / total : 0;
      weights[t] = static_cast<int32_t>(weight * (1 << kWeightBits) + 0.5);
    }
    axis->begin[i] = bounds.begin + first;
    axis->window = std::max(axis->window, count);
  }
  // Windows that would pass the end of the bounds start earlier instead,
  // their weights moved right (count <= window <= in_size).
  for (int i = 0; i < out_size; ++i) {
    const int excess = axis->begin[i] + axis->window - bounds.end;
    if (excess <= 0) continue;
    int32_t* weights = &axis->weights[static_cast<size_t>(i) * taps];
    std::copy_backward(weights, weights + axis->window - excess, weights + axis->window);
    std::fill(weights, weights + excess, 0);
    axis->begin[i] -= excess;
  }
  PackPairs(axis);
}

void MirrorAxis(Axis* axis) {
  const int size = axis->size();
  if (axis->identity) MakeExplicit(*axis, axis);  // which can be reversed
  std::reverse(axis->begin.begin(), axis->begin.end());
  for (int i = 0, j = size - 1; i < j; ++i, --j) {
    std::swap_ranges(&axis->weights[static_cast<size_t>(i) * axis->taps],
                     &axis->weights[static_cast<size_t>(i + 1) * axis->taps],
                     &axis->weights[static_cast<size_t>(j) * axis->taps]);
  }
  PackPairs(axis);
}

void ResampleScratch::ReleaseIfOver(size_t max_bytes) {
  FreeIfOver(horizontal, max_bytes);
  FreeIfOver(block, max_bytes);
  FreeIfOver(sums, max_bytes);
  FreeIfOver(interleaved, max_bytes);
}

Simd BestSimd() {
#if SHARDLOADER_RESAMPLE_AVX2 && defined(__AVX2__)
  return Simd::kAvx2;
#elif SHARDLOADER_RESAMPLE_AVX2
  static const Simd best = __builtin_cpu_supports("avx2") ? Simd::kAvx2 : Simd::kSse2;
  return best;
#elif SHARDLOADER_RESAMPLE_SSE2
  return Simd::kSse2;
#else
  return Simd::kNone;
#endif
}

void Resample(const RgbView& src, const Axis& x, const Axis& y, ResampleScratch& scratch,
              const RgbOutput& dst) {
  ResampleImpl(BestSimd(), src, x, y, scratch, dst);
}

void ResampleWith(Simd simd, const RgbView& src, const Axis& x, const Axis& y,
                  ResampleScratch& scratch, const RgbOutput& dst) {
  ResampleImpl(std::min(simd, BestSimd()), src, x, y, scratch, dst);
}

}  // namespace shardloader::internal_resample
