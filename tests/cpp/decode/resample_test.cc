#include "shardloader/decode/resample.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace shardloader::internal_resample {
namespace {

// ------------------------------------------------ Pillow's algorithm ----
//
// Pillow's BILINEAR Image.resize(size, box=box) of an 8-bit RGB image
// (libImaging/Resample.c up to Pillow 12), written out plainly as the
// oracle: per output pixel, the input pixels from xmin = (int)(center -
// support + 0.5) (at least 0) to xmax = (int)(center + support + 0.5) (at
// most the size), weighted by the triangle, normalized, and rounded to
// 22-bit fixed point; the horizontal pass over the rows that the vertical
// pass reads, rounded to 8 bits, then the vertical pass. A pass is skipped
// when its box is the whole axis at the same size.

struct PillowAxis {
  std::vector<int> first;
  std::vector<std::vector<int32_t>> weights;
};

PillowAxis PillowCoefficients(int in_size, double low, double high, int out_size) {
  const double scale = (high - low) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_scale;
  const double inverse_scale = 1.0 / filter_scale;
  PillowAxis axis;
  for (int i = 0; i < out_size; ++i) {
    const double center = low + (i + 0.5) * scale;
    const int first = std::max(static_cast<int>(center - support + 0.5), 0);
    const int end = std::min(static_cast<int>(center + support + 0.5), in_size);
    std::vector<double> real;
    double total = 0;
    for (int x = first; x < end; ++x) {
      const double d = std::abs((x - center + 0.5) * inverse_scale);
      real.push_back(d < 1 ? 1 - d : 0);
      total += real.back();
    }
    std::vector<int32_t> weights;
    for (const double w : real) {
      const double normalized = total != 0 ? w / total : 0;
      weights.push_back(static_cast<int32_t>(normalized * (1 << 22) + 0.5));
    }
    axis.first.push_back(first);
    axis.weights.push_back(weights);
  }
  return axis;
}

// An RGB image, rows of 3 * width bytes.
struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;

  uint8_t& at(int x, int y, int c) { return pixels[(static_cast<size_t>(y) * width + x) * 3 + c]; }
  uint8_t at(int x, int y, int c) const {
    return pixels[(static_cast<size_t>(y) * width + x) * 3 + c];
  }
};

// Output pixel i (of `axis`) of channel c, `pixel(p)` giving input pixel p.
template <typename Pixel>
uint8_t Filter(const PillowAxis& axis, int i, Pixel pixel) {
  int64_t sum = 1 << 21;
  for (size_t t = 0; t < axis.weights[i].size(); ++t) {
    sum += int64_t{pixel(axis.first[i] + static_cast<int>(t))} * axis.weights[i][t];
  }
  return static_cast<uint8_t>(std::clamp<int64_t>(sum >> 22, 0, 255));
}

// Image.resize((width, height), BILINEAR, box=(x0, y0, x1, y1)), the box in
// double precision.
Image PillowResize(const Image& in, double x0, double y0, double x1, double y1, int width,
                   int height) {
  const bool need_horizontal = width != in.width || x0 != 0 || x1 != width;
  const bool need_vertical = height != in.height || y0 != 0 || y1 != height;
  const PillowAxis vertical = PillowCoefficients(in.height, y0, y1, height);
  Image image = in;
  int first_row = 0;  // input row of image's row 0
  if (need_horizontal) {
    const PillowAxis horizontal = PillowCoefficients(in.width, x0, x1, width);
    first_row = vertical.first.front();
    const int end_row = vertical.first.back() + static_cast<int>(vertical.weights.back().size());
    image = {width, end_row - first_row,
             std::vector<uint8_t>(size_t{3} * width * (end_row - first_row))};
    for (int y = first_row; y < end_row; ++y) {
      for (int i = 0; i < width; ++i) {
        for (int c = 0; c < 3; ++c) {
          image.at(i, y - first_row, c) =
              Filter(horizontal, i, [&](int x) { return in.at(x, y, c); });
        }
      }
    }
  }
  if (!need_vertical) return image;
  Image out{image.width, height, std::vector<uint8_t>(size_t{3} * image.width * height)};
  for (int j = 0; j < height; ++j) {
    for (int x = 0; x < image.width; ++x) {
      for (int c = 0; c < 3; ++c) {
        out.at(x, j, c) = Filter(vertical, j, [&](int y) { return image.at(x, y - first_row, c); });
      }
    }
  }
  return out;
}

// ------------------------------------------------------------ cases ----

// A random resampling: [x0, x1) x [y0, y1) of the pixels [bounds] of a
// larger image (the crop, an image of its own for the filter), to
// width x height.
struct Case {
  int image_width = 0;
  int image_height = 0;
  Span x_bounds;
  Span y_bounds;
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int width = 0;
  int height = 0;

  std::string Describe() const {
    return "image " + std::to_string(image_width) + "x" + std::to_string(image_height) +
           ", bounds x [" + std::to_string(x_bounds.begin) + ", " + std::to_string(x_bounds.end) +
           ") y [" + std::to_string(y_bounds.begin) + ", " + std::to_string(y_bounds.end) +
           "), box (" + std::to_string(x0) + ", " + std::to_string(y0) + ", " + std::to_string(x1) +
           ", " + std::to_string(y1) + ") to " + std::to_string(width) + "x" +
           std::to_string(height);
  }
};

// One axis of a random case: bounds of `size` pixels inside [0, limit), a
// box inside them (sometimes whole or integer, sometimes the output's size
// for an identity filter) and an output size.
void RandomAxis(std::mt19937_64& rng, Span* bounds, double* low, double* high, int* out) {
  auto uniform = [&rng](int low, int high) {  // [low, high]
    return std::uniform_int_distribution<int>(low, high)(rng);
  };
  const int kind = uniform(0, 9);
  // Mostly small, sometimes past a few blocks of 16.
  const int size = kind < 7 ? uniform(1, 40) : uniform(41, 300);
  const int offset = uniform(0, 20);
  *bounds = {offset, offset + size};
  const double real_size = size;
  switch (uniform(0, 5)) {
    case 0:  // the whole axis
      *low = 0;
      *high = real_size;
      break;
    case 1: {  // an integer sub-range
      const int a = uniform(0, size - 1);
      const int b = uniform(a + 1, size);
      *low = a;
      *high = b;
      break;
    }
    default: {  // fractional
      std::uniform_real_distribution<double> u(0, real_size);
      double a = u(rng);
      double b = u(rng);
      if (a > b) std::swap(a, b);
      if (b - a < 0.25) b = std::min(real_size, a + 0.25);
      if (b - a < 0.25) a = b - 0.25;
      *low = a;
      *high = b;
      break;
    }
  }
  const double extent = *high - *low;
  switch (uniform(0, 4)) {
    case 0:  // the same size: identity if the box is integer
      *out = std::max(1, static_cast<int>(std::lround(extent)));
      break;
    case 1:  // upsampling
      *out = uniform(static_cast<int>(std::ceil(extent)), 3 * size + 3);
      break;
    case 2:  // tiny output (the portable code)
      *out = uniform(1, 6);
      break;
    default:  // downsampling, up to 12 times
      *out = std::max(
          1, static_cast<int>(extent / std::uniform_real_distribution<double>(1, 12)(rng)));
      break;
  }
  // The box in the image's coordinates.
  *low += offset;
  *high += offset;
}

Case RandomCase(std::mt19937_64& rng) {
  Case c;
  RandomAxis(rng, &c.x_bounds, &c.x0, &c.x1, &c.width);
  RandomAxis(rng, &c.y_bounds, &c.y0, &c.y1, &c.height);
  c.image_width = c.x_bounds.end + 3;
  c.image_height = c.y_bounds.end + 2;
  return c;
}

Image RandomImage(std::mt19937_64& rng, int width, int height) {
  Image image{width, height, std::vector<uint8_t>(size_t{3} * width * height)};
  // Mostly noise, sometimes flat areas and extremes (clipping).
  const int kind = static_cast<int>(rng() % 3);
  for (uint8_t& byte : image.pixels) {
    const uint64_t r = rng();
    byte = kind == 0   ? static_cast<uint8_t>(r)
           : kind == 1 ? static_cast<uint8_t>((r & 1) ? 255 : 0)
                       : static_cast<uint8_t>(200 + r % 56);
  }
  return image;
}

// The bounds of `image` as an image of their own.
Image Crop(const Image& image, Span x, Span y) {
  Image out{x.end - x.begin, y.end - y.begin, {}};
  for (int row = y.begin; row < y.end; ++row) {
    const uint8_t* begin = &image.pixels[(static_cast<size_t>(row) * image.width + x.begin) * 3];
    out.pixels.insert(out.pixels.end(), begin, begin + out.width * 3);
  }
  return out;
}

std::vector<uint8_t> ResampleImage(Simd simd, const Image& image, const Axis& x, const Axis& y,
                                   bool planar, ResampleScratch& scratch) {
  // The view starts at pixel (1, 1) of the image; the row stride has slack.
  const size_t stride = size_t{3} * image.width;
  const RgbView view{image.pixels.data() + stride + 3, stride, 1, 1};
  const int width = x.size();
  const int height = y.size();
  std::vector<uint8_t> out(size_t{3} * width * height, 0xAB);
  RgbOutput dst;
  dst.data = out.data();
  dst.planar = planar;
  dst.row_stride = planar ? width : size_t{3} * width;
  dst.plane_stride = planar ? size_t{1} * width * height : 0;
  ResampleWith(simd, view, x, y, scratch, dst);
  return out;
}

std::vector<uint8_t> ToPlanar(const std::vector<uint8_t>& hwc, int width, int height) {
  std::vector<uint8_t> chw(hwc.size());
  const size_t plane = size_t{1} * width * height;
  for (size_t p = 0; p < plane; ++p) {
    for (size_t c = 0; c < 3; ++c) chw[c * plane + p] = hwc[p * 3 + c];
  }
  return chw;
}

std::vector<uint8_t> MirrorRows(const std::vector<uint8_t>& hwc, int width) {
  std::vector<uint8_t> out(hwc.size());
  const size_t row = size_t{3} * width;
  for (size_t y = 0; y < hwc.size() / row; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        out[y * row + 3 * x + c] = hwc[y * row + 3 * (width - 1 - x) + c];
      }
    }
  }
  return out;
}

// Every instruction set that this build and processor support (ResampleWith
// caps the others to these, so some cases may repeat).
constexpr Simd kSimds[] = {Simd::kNone, Simd::kSse2, Simd::kAvx2};

std::string SimdName(Simd simd) {
  const char* names[] = {"plain C++", "SSE2", "AVX2"};
  return names[static_cast<int>(std::min(simd, BestSimd()))];
}

// Resample with each instruction set, interleaved and planar, with the x
// filter mirrored or not: all bit for bit Pillow's resize of the crop, over
// many random geometries: identity, integer and fractional boxes, up- and
// downsampling, outputs and inputs narrower than a vector, more rows than a
// block of 16.
TEST(ResampleTest, MatchesPillowsAlgorithmExactly) {
  std::mt19937_64 rng(20240611);
  ResampleScratch scratch;  // shared, as a thread's would be
  Axis x;
  Axis y;
  int num_identity = 0;
  int num_wide = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const Case c = RandomCase(rng);
    SCOPED_TRACE(c.Describe());
    const Image image = RandomImage(rng, c.image_width, c.image_height);
    BuildAxis(c.x0, c.x1, c.x_bounds, c.width, &x);
    BuildAxis(c.y0, c.y1, c.y_bounds, c.height, &y);
    num_identity += x.identity || y.identity;
    num_wide += c.width >= 16 && c.x_bounds.end - c.x_bounds.begin >= 16;
    const Image expected = PillowResize(
        Crop(image, c.x_bounds, c.y_bounds), c.x0 - c.x_bounds.begin, c.y0 - c.y_bounds.begin,
        c.x1 - c.x_bounds.begin, c.y1 - c.y_bounds.begin, c.width, c.height);
    ASSERT_EQ(expected.pixels.size(), size_t{3} * c.width * c.height);
    Axis mirrored = x;
    MirrorAxis(&mirrored);
    const std::vector<uint8_t> flipped = MirrorRows(expected.pixels, c.width);
    for (const Simd simd : kSimds) {
      SCOPED_TRACE(SimdName(simd));
      EXPECT_EQ(ResampleImage(simd, image, x, y, /*planar=*/false, scratch), expected.pixels);
      EXPECT_EQ(ResampleImage(simd, image, x, y, /*planar=*/true, scratch),
                ToPlanar(expected.pixels, c.width, c.height));
      EXPECT_EQ(ResampleImage(simd, image, mirrored, y, /*planar=*/false, scratch), flipped);
      EXPECT_EQ(ResampleImage(simd, image, mirrored, y, /*planar=*/true, scratch),
                ToPlanar(flipped, c.width, c.height));
    }
    if (HasFailure()) break;
  }
  std::cout << "best instruction set: " << SimdName(BestSimd()) << "\n";
  EXPECT_GT(num_identity, 100);
  EXPECT_GT(num_wide, 300);
}

// ImageNet-like sizes: a 224 x 224 output of crops that shrink by 1 to 2.2
// (windows of 2 to 6 pixels), as kRandomResizedCrop and kCenterCrop do.
TEST(ResampleTest, MatchesPillowAtTrainingSizes) {
  std::mt19937_64 rng(7);
  ResampleScratch scratch;
  Axis x;
  Axis y;
  for (int trial = 0; trial < 12; ++trial) {
    std::uniform_real_distribution<double> shrink(1, 2.2);
    std::uniform_real_distribution<double> fraction(0, 1);
    const double width = 224 * shrink(rng);
    const double height = 224 * shrink(rng);
    const double x0 = 3 * fraction(rng);
    const double y0 = 3 * fraction(rng);
    Case c;
    c.x_bounds = {0, static_cast<int>(std::ceil(x0 + width))};
    c.y_bounds = {0, static_cast<int>(std::ceil(y0 + height))};
    c.x0 = x0;
    c.y0 = y0;
    c.x1 = x0 + width;
    c.y1 = y0 + height;
    c.width = c.height = 224;
    c.image_width = c.x_bounds.end + 1;
    c.image_height = c.y_bounds.end + 1;
    SCOPED_TRACE(c.Describe());
    const Image image = RandomImage(rng, c.image_width, c.image_height);
    BuildAxis(c.x0, c.x1, c.x_bounds, c.width, &x);
    BuildAxis(c.y0, c.y1, c.y_bounds, c.height, &y);
    const Image expected = PillowResize(Crop(image, c.x_bounds, c.y_bounds), c.x0, c.y0, c.x1, c.y1,
                                        c.width, c.height);
    for (const Simd simd : kSimds) {
      SCOPED_TRACE(SimdName(simd));
      EXPECT_EQ(ResampleImage(simd, image, x, y, /*planar=*/false, scratch), expected.pixels);
      EXPECT_EQ(ResampleImage(simd, image, x, y, /*planar=*/true, scratch),
                ToPlanar(expected.pixels, c.width, c.height));
    }
  }
}

TEST(ResampleTest, IdentityFiltersCopy) {
  Axis x;
  BuildAxis(2, 34, {0, 40}, 32, &x);
  EXPECT_TRUE(x.identity);
  Axis fractional;
  BuildAxis(2.5, 34.5, {0, 40}, 32, &fractional);
  EXPECT_FALSE(fractional.identity);
  Axis scaled;
  BuildAxis(2, 34, {0, 40}, 31, &scaled);
  EXPECT_FALSE(scaled.identity);
}

// A mirrored filter reads the same pixels, in the opposite order, and an
// identity filter stops being one.
TEST(ResampleTest, MirrorAxisReversesTheFilter) {
  Axis axis;
  BuildAxis(1.25, 30.5, {0, 32}, 17, &axis);
  Axis mirrored = axis;
  MirrorAxis(&mirrored);
  EXPECT_EQ(mirrored.Reads().begin, axis.Reads().begin);
  EXPECT_EQ(mirrored.Reads().end, axis.Reads().end);
  for (int i = 0; i < axis.size(); ++i) {
    EXPECT_EQ(mirrored.begin[i], axis.begin[axis.size() - 1 - i]);
  }
  Axis identity;
  BuildAxis(3, 23, {0, 40}, 20, &identity);
  ASSERT_TRUE(identity.identity);
  MirrorAxis(&identity);
  EXPECT_FALSE(identity.identity);
  EXPECT_EQ(identity.begin.front(), 22);
  EXPECT_EQ(identity.begin.back(), 3);
}

}  // namespace
}  // namespace shardloader::internal_resample
