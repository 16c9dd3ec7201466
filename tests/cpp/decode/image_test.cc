#include "shardloader/decode/image.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardloader {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

#ifdef SHARDLOADER_SHARED_DATA_DIR
const char kSharedDataDir[] = SHARDLOADER_SHARED_DATA_DIR;
#else
const char kSharedDataDir[] = "";
#endif

namespace fs = std::filesystem;

fs::path ImagesDir() { return fs::path(kSharedDataDir) / "edge" / "images"; }

#define SKIP_WITHOUT_IMAGES()                                          \
  if (!fs::is_directory(ImagesDir())) {                                \
    GTEST_SKIP() << "shared data not found at " << ImagesDir().string(); \
  }

std::string ReadFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file),
                     std::istreambuf_iterator<char>());
}

absl::StatusOr<std::vector<uint8_t>> Decode(
    std::string_view encoded, int height, int width,
    ResizeMode resize = ResizeMode::kStretch, Layout layout = Layout::kHWC) {
  ImageOptions options;
  options.height = height;
  options.width = width;
  options.resize = resize;
  options.layout = layout;
  std::vector<uint8_t> output(size_t{3} * height * width);
  const absl::Status status = DecodeImage(encoded, options, output.data());
  if (!status.ok()) return status;
  return output;
}

std::vector<uint8_t> HwcToChw(const std::vector<uint8_t>& hwc) {
  const size_t num_pixels = hwc.size() / 3;
  std::vector<uint8_t> chw(hwc.size());
  for (size_t i = 0; i < num_pixels; ++i) {
    for (size_t c = 0; c < 3; ++c) chw[c * num_pixels + i] = hwc[3 * i + c];
  }
  return chw;
}

// The JPEGs in edge/images (and orientation/), except truncated.jpg.
std::vector<fs::path> Jpegs() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::recursive_directory_iterator(ImagesDir())) {
    if (entry.path().extension() == ".jpg" &&
        entry.path().filename() != "truncated.jpg") {
      paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

std::vector<fs::path> Pngs() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(ImagesDir())) {
    if (entry.path().extension() == ".png") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// ------------------------------------------------- a minimal PNG writer ----

uint32_t Crc32(std::string_view bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char byte : bytes) {
    crc ^= static_cast<uint8_t>(byte);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
    }
  }
  return ~crc;
}

void AppendBigEndian32(uint32_t value, std::string* out) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out->push_back(static_cast<char>((value >> shift) & 0xFF));
  }
}

void AppendChunk(std::string_view type, std::string_view data,
                 std::string* png) {
  AppendBigEndian32(static_cast<uint32_t>(data.size()), png);
  const std::string body = std::string(type) + std::string(data);
  *png += body;
  AppendBigEndian32(Crc32(body), png);
}

// A zlib stream of stored (uncompressed) deflate blocks.
std::string ZlibStored(std::string_view data) {
  std::string out = "\x78\x01";
  size_t offset = 0;
  do {
    const size_t size = std::min<size_t>(65535, data.size() - offset);
    const bool last = offset + size == data.size();
    out.push_back(last ? 1 : 0);
    out.push_back(static_cast<char>(size & 0xFF));
    out.push_back(static_cast<char>(size >> 8));
    out.push_back(static_cast<char>(~size & 0xFF));
    out.push_back(static_cast<char>((~size >> 8) & 0xFF));
    out += data.substr(offset, size);
    offset += size;
  } while (offset < data.size());
  uint32_t a = 1;
  uint32_t b = 0;
  for (const char byte : data) {
    a = (a + static_cast<uint8_t>(byte)) % 65521;
    b = (b + a) % 65521;
  }
  AppendBigEndian32(b << 16 | a, &out);
  return out;
}

enum PngColor : uint8_t {
  kGray = 0,
  kRgb = 2,
  kPalette = 3,
  kGrayAlpha = 4,
  kRgba = 6,
};

// Encodes `rows` (each row's packed samples, without the filter byte).
std::string MakePng(uint32_t width, uint32_t height, uint8_t bit_depth,
                    PngColor color, const std::vector<std::string>& rows,
                    std::string_view palette = "",
                    std::string_view transparency = "") {
  std::string png = "\x89PNG\r\n\x1A\n";
  std::string header;
  AppendBigEndian32(width, &header);
  AppendBigEndian32(height, &header);
  header += static_cast<char>(bit_depth);
  header += static_cast<char>(color);
  header += std::string(3, '\0');  // deflate, adaptive filters, no interlace
  AppendChunk("IHDR", header, &png);
  if (!palette.empty()) AppendChunk("PLTE", palette, &png);
  if (!transparency.empty()) AppendChunk("tRNS", transparency, &png);
  std::string raw;
  for (const std::string& row : rows) raw += '\0' + row;
  AppendChunk("IDAT", ZlibStored(raw), &png);
  AppendChunk("IEND", "", &png);
  return png;
}

std::string SolidRgbPng(int width, int height, std::array<uint8_t, 3> rgb) {
  std::string row;
  for (int x = 0; x < width; ++x) row.append(rgb.begin(), rgb.end());
  return MakePng(width, height, 8, kRgb, std::vector<std::string>(height, row));
}

void ExpectSolid(const std::vector<uint8_t>& pixels,
                 std::array<uint8_t, 3> rgb, int tolerance = 0) {
  for (size_t i = 0; i < pixels.size(); ++i) {
    ASSERT_NEAR(pixels[i], rgb[i % 3], tolerance) << "byte " << i;
  }
}

// ------------------------------------------------------- PIL as oracle ----

bool HavePil() {
  return std::system("python3 -c 'import PIL' >/dev/null 2>&1") == 0;
}

fs::path TempPath(const std::string& name) {
  return fs::path(testing::TempDir()) / name;
}

// Decodes each file given after the output folder with PIL, writing
// <i>.rgb (Image.open(...).convert("RGB") as HWC bytes) and <i>.size.
constexpr char kPilDecode[] = R"py(
import sys, warnings
from PIL import Image
warnings.simplefilter("ignore")
for i, path in enumerate(sys.argv[2:]):
    image = Image.open(path)
    with open(f"{sys.argv[1]}/{i}.size", "w") as f:
        f.write(f"{image.width} {image.height}")
    with open(f"{sys.argv[1]}/{i}.rgb", "wb") as f:
        f.write(image.convert("RGB").tobytes())
)py";

struct PilImage {
  int width = 0;
  int height = 0;
  std::string rgb;  // HWC
};

// PIL's decoding of `paths`, in one Python process; empty if it failed.
std::vector<PilImage> PilDecode(const std::vector<fs::path>& paths) {
  const fs::path dir = TempPath("pil");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "decode.py") << kPilDecode;
  std::string command = "python3 '" + (dir / "decode.py").string() + "' '" +
                        dir.string() + "'";
  for (const fs::path& path : paths) command += " '" + path.string() + "'";
  if (std::system(command.c_str()) != 0) return {};
  std::vector<PilImage> images(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    std::ifstream(dir / (std::to_string(i) + ".size")) >> images[i].width >>
        images[i].height;
    images[i].rgb = ReadFile(dir / (std::to_string(i) + ".rgb"));
  }
  return images;
}

// ------------------------------------------------------------- errors ----

TEST(DecodeImageTest, RejectsNonPositiveSizes) {
  const std::string png = SolidRgbPng(4, 4, {1, 2, 3});
  for (const auto& [height, width] :
       std::vector<std::pair<int, int>>{{0, 4}, {4, 0}, {-1, 4}, {4, -8}}) {
    ImageOptions options;
    options.height = height;
    options.width = width;
    uint8_t unused = 0;
    EXPECT_EQ(DecodeImage(png, options, &unused).code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(DecodeImageTest, RejectsOtherFormats) {
  for (const std::string& bytes :
       {std::string(), std::string("\xFF\xD8"), std::string("GIF89a...."),
        std::string("\x89PNG\r\n"), std::string(100, '\0')}) {
    const auto decoded = Decode(bytes, 8, 8);
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(decoded.status().message(), "not a JPEG or PNG image");
  }
}

TEST(DecodeImageTest, RejectsTiff) {
  SKIP_WITHOUT_IMAGES();
  const auto decoded =
      Decode(ReadFile(ImagesDir() / "chessboard_GRAY_U16.tif"), 8, 8);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(decoded.status().message(), "not a JPEG or PNG image");
}

TEST(DecodeImageTest, RejectsTruncatedJpeg) {
  SKIP_WITHOUT_IMAGES();
  const std::string truncated = ReadFile(ImagesDir() / "truncated.jpg");
  for (const ResizeMode mode :
       {ResizeMode::kCenterCrop, ResizeMode::kStretch}) {
    const auto decoded = Decode(truncated, 64, 64, mode);
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(decoded.status().message()),
                StartsWith("JPEG decode failed: "));
  }
}

// libjpeg-turbo only warns about a JPEG cut inside its entropy-coded data
// (and fills the rest with gray); that must be an error too.
TEST(DecodeImageTest, RejectsJpegCutInsideTheScan) {
  SKIP_WITHOUT_IMAGES();
  const std::string jpeg = ReadFile(ImagesDir() / "444.jpg");
  for (const double fraction : {0.5, 0.9, 0.99}) {
    const std::string cut = jpeg.substr(0, jpeg.size() * fraction);
    for (const auto& [height, width] :
         std::vector<std::pair<int, int>>{{453, 680}, {64, 64}}) {
      const auto decoded = Decode(cut, height, width);
      EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss)
          << fraction;
      EXPECT_THAT(std::string(decoded.status().message()),
                  StartsWith("JPEG decode failed: "));
    }
  }
}

// Extraneous bytes before a marker only make libjpeg warn; the pixels are
// intact (PIL accepts such files, and real datasets contain them).
TEST(DecodeImageTest, AcceptsExtraneousBytesBeforeAMarker) {
  SKIP_WITHOUT_IMAGES();
  const std::string jpeg = ReadFile(ImagesDir() / "444.jpg");
  ASSERT_EQ(jpeg.substr(jpeg.size() - 2), "\xff\xd9");
  const std::string padded =
      jpeg.substr(0, jpeg.size() - 2) + std::string(7, '\x11') + "\xff\xd9";
  const auto clean = Decode(jpeg, 64, 64);
  const auto decoded = Decode(padded, 64, 64);
  ASSERT_TRUE(clean.ok()) << clean.status();
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, *clean);
}

// After some header errors, libjpeg-turbo 2.1 leaves a TurboJPEG handle
// unusable; the next image on the same thread must still decode.
TEST(DecodeImageTest, RecoversAfterErrors) {
  SKIP_WITHOUT_IMAGES();
  const std::string good = ReadFile(ImagesDir() / "444.jpg");
  const auto expected = Decode(good, 32, 32);
  ASSERT_TRUE(expected.ok()) << expected.status();
  const std::string bad_inputs[] = {
      ReadFile(ImagesDir() / "truncated.jpg"),
      good.substr(0, 300),
      good.substr(0, good.size() / 2),
      SolidRgbPng(5, 5, {1, 2, 3}).substr(0, 40),
  };
  for (const std::string& bad : bad_inputs) {
    EXPECT_FALSE(Decode(bad, 32, 32).ok());
    const auto again = Decode(good, 32, 32);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, *expected);
  }
}

TEST(DecodeImageTest, EveryTruncationFailsCleanly) {
  SKIP_WITHOUT_IMAGES();
  for (const char* name : {"422-odd-width.jpg", "palette_color.png",
                           "foo3x5x4indexed.png"}) {
    const std::string bytes = ReadFile(ImagesDir() / name);
    const size_t step = std::max<size_t>(1, bytes.size() / 300);
    for (size_t size = 0; size < bytes.size(); size += step) {
      const auto decoded = Decode(bytes.substr(0, size), 16, 16);
      EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss)
          << name << " cut at " << size;
    }
    EXPECT_TRUE(Decode(bytes, 16, 16).ok()) << name;
  }
}

// Flipped bytes may or may not be detected, but must never crash or return
// anything but OK or DataLoss.
TEST(DecodeImageTest, SurvivesCorruptedBytes) {
  SKIP_WITHOUT_IMAGES();
  std::mt19937 random(42);
  for (const char* name : {"420-odd-both.jpg", "green_palette.png"}) {
    const std::string bytes = ReadFile(ImagesDir() / name);
    for (int round = 0; round < 150; ++round) {
      std::string corrupt = bytes;
      // Mostly in the headers, where the interesting parsing happens.
      const size_t range = round % 2 == 0 ? std::min<size_t>(bytes.size(), 700)
                                          : bytes.size();
      for (int i = 0; i < 4; ++i) {
        corrupt[2 + random() % (range - 2)] = static_cast<char>(random());
      }
      const auto decoded = Decode(corrupt, 24, 40, ResizeMode::kCenterCrop);
      if (!decoded.ok()) {
        EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss)
            << decoded.status();
      }
    }
  }
}

TEST(DecodeImageTest, RejectsHugeDimensionsBeforeAllocating) {
  // A 100000 x 100000 PNG header with a single row of data.
  const std::string png =
      MakePng(100000, 100000, 8, kGray, {std::string(100000, '\0')});
  const auto decoded = Decode(png, 8, 8);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(decoded.status().message()), HasSubstr("too large"));

  ImageOptions options;
  options.height = 1 << 15;
  options.width = 1 << 15;
  uint8_t unused = 0;
  EXPECT_EQ(DecodeImage(png, options, &unused).code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------- real files ----

TEST(DecodeImageTest, DecodesEveryJpeg) {
  SKIP_WITHOUT_IMAGES();
  const std::vector<fs::path> jpegs = Jpegs();
  EXPECT_GE(jpegs.size(), 25u);
  for (const fs::path& path : jpegs) {
    SCOPED_TRACE(path.filename().string());
    const std::string jpeg = ReadFile(path);
    for (const ResizeMode mode :
         {ResizeMode::kCenterCrop, ResizeMode::kStretch}) {
      const auto hwc = Decode(jpeg, 64, 64, mode, Layout::kHWC);
      ASSERT_TRUE(hwc.ok()) << hwc.status();
      const auto chw = Decode(jpeg, 64, 64, mode, Layout::kCHW);
      ASSERT_TRUE(chw.ok()) << chw.status();
      EXPECT_EQ(*chw, HwcToChw(*hwc));
      // A photo, not a constant (e.g. gray-filled) image.
      const auto [low, high] = std::minmax_element(hwc->begin(), hwc->end());
      EXPECT_GT(*high - *low, 50);
    }
    // A non-square output, up- and down-sampled.
    EXPECT_TRUE(Decode(jpeg, 37, 300, ResizeMode::kCenterCrop).ok());
    EXPECT_TRUE(Decode(jpeg, 1000, 13, ResizeMode::kStretch).ok());
  }
}

TEST(DecodeImageTest, DecodesEveryPng) {
  SKIP_WITHOUT_IMAGES();
  const std::vector<fs::path> pngs = Pngs();
  EXPECT_GE(pngs.size(), 4u);
  for (const fs::path& path : pngs) {
    SCOPED_TRACE(path.filename().string());
    const std::string png = ReadFile(path);
    for (const ResizeMode mode :
         {ResizeMode::kCenterCrop, ResizeMode::kStretch}) {
      const auto hwc = Decode(png, 64, 48, mode, Layout::kHWC);
      ASSERT_TRUE(hwc.ok()) << hwc.status();
      const auto chw = Decode(png, 64, 48, mode, Layout::kCHW);
      ASSERT_TRUE(chw.ok()) << chw.status();
      EXPECT_EQ(*chw, HwcToChw(*hwc));
    }
  }
}

// EXIF orientation is not applied: the orientation variants hold the same
// pixels and decode identically.
TEST(DecodeImageTest, IgnoresExifOrientation) {
  SKIP_WITHOUT_IMAGES();
  const fs::path dir = ImagesDir() / "orientation";
  const auto reference =
      Decode(ReadFile(dir / "padlock-406986_640_no_exif.jpg"), 426, 640);
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto decoded = Decode(ReadFile(entry.path()), 426, 640);
    ASSERT_TRUE(decoded.ok()) << entry.path() << decoded.status();
    EXPECT_TRUE(*decoded == *reference) << entry.path();
  }
}

// Decoding at the image's own size does no resampling: the output is PIL's
// Image.open(...).convert("RGB") byte for byte.
TEST(DecodeImageTest, MatchesPilAtFullSize) {
  SKIP_WITHOUT_IMAGES();
  if (!HavePil()) GTEST_SKIP() << "python3 with PIL is not available";
  std::vector<fs::path> paths;
  for (const char* name :
       {"420-odd-both.jpg", "420-odd-width.jpg", "420-odd-height.jpg",
        "422-odd-width.jpg", "411-non-multiple-4-width.jpg", "410.jpg",
        "2x4.jpg", "440.jpg", "444.jpg", "dog-3277414_640.jpg", "logo.png",
        "palette_color.png", "foo3x5x4indexed.png", "green_palette.png"}) {
    paths.push_back(ImagesDir() / name);
  }
  const std::vector<PilImage> expected = PilDecode(paths);
  ASSERT_EQ(expected.size(), paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    SCOPED_TRACE(paths[i].filename().string());
    const PilImage& pil = expected[i];
    const std::string bytes = ReadFile(paths[i]);
    for (const ResizeMode mode :
         {ResizeMode::kStretch, ResizeMode::kCenterCrop}) {
      const auto decoded = Decode(bytes, pil.height, pil.width, mode);
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      EXPECT_TRUE(std::string(decoded->begin(), decoded->end()) == pil.rgb);
    }
    const auto chw = Decode(bytes, pil.height, pil.width,
                            ResizeMode::kStretch, Layout::kCHW);
    ASSERT_TRUE(chw.ok());
    EXPECT_EQ(*chw,
              HwcToChw(std::vector<uint8_t>(pil.rgb.begin(), pil.rgb.end())));
  }
}

// Area average of the region [x0, x1) x [y0, y1) (pixel units, clipped to
// the image) of an HWC image, sampled to width x height: a reference for
// the resampler.
std::vector<double> BoxResample(const std::vector<uint8_t>& image,
                                int image_width, int image_height, double x0,
                                double y0, double x1, double y1, int width,
                                int height) {
  std::vector<double> out(size_t{3} * width * height);
  const double step_x = (x1 - x0) / width;
  const double step_y = (y1 - y0) / height;
  auto span = [](double start, double end, int limit) {
    const int low = std::clamp(static_cast<int>(start), 0, limit - 1);
    const int high = std::clamp(static_cast<int>(end), low + 1, limit);
    return std::pair<int, int>(low, high);
  };
  for (int oy = 0; oy < height; ++oy) {
    const auto [top, bottom] =
        span(y0 + oy * step_y, y0 + (oy + 1) * step_y, image_height);
    for (int ox = 0; ox < width; ++ox) {
      const auto [left, right] =
          span(x0 + ox * step_x, x0 + (ox + 1) * step_x, image_width);
      for (int c = 0; c < 3; ++c) {
        double sum = 0;
        for (int y = top; y < bottom; ++y) {
          for (int x = left; x < right; ++x) {
            sum += image[(size_t{3} * y * image_width) + 3 * x + c];
          }
        }
        out[(size_t{3} * oy * width) + 3 * ox + c] =
            sum / ((bottom - top) * (right - left));
      }
    }
  }
  return out;
}

// Mitchell (stb_image_resize) and DCT-domain scaling differ from a box
// filter by a few levels on average; a misplaced region differs by far more.
constexpr double kMaxResampleError = 7.0;

double MeanAbsoluteDifference(const std::vector<uint8_t>& a,
                              const std::vector<double>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::abs(a[i] - b[i]);
  return sum / a.size();
}

// Downscaling (with TurboJPEG's DCT scaling for JPEGs) keeps the geometry:
// the output is close to an area average of the full-size decode over the
// expected region, and far from one over a slightly shifted region.
TEST(DecodeImageTest, DownscalingMatchesAreaAverage) {
  SKIP_WITHOUT_IMAGES();
  struct Case {
    const char* name;
    int width;
    int height;
  };
  for (const Case& c : {Case{"hubble_deep_field.jpg", 1000, 872},
                        Case{"420-odd-both.jpg", 1277, 851},
                        Case{"dog-3277414_640.jpg", 427, 640},
                        Case{"logo.png", 500, 500}}) {
    SCOPED_TRACE(c.name);
    const std::string bytes = ReadFile(ImagesDir() / c.name);
    const auto full = Decode(bytes, c.height, c.width);
    ASSERT_TRUE(full.ok()) << full.status();
    for (const auto& [height, width] :
         std::vector<std::pair<int, int>>{{64, 64}, {48, 80}, {90, 30}}) {
      SCOPED_TRACE(std::to_string(height) + "x" + std::to_string(width));
      const auto stretch = Decode(bytes, height, width, ResizeMode::kStretch);
      ASSERT_TRUE(stretch.ok()) << stretch.status();
      const std::vector<double> whole = BoxResample(
          *full, c.width, c.height, 0, 0, c.width, c.height, width, height);
      EXPECT_LT(MeanAbsoluteDifference(*stretch, whole), kMaxResampleError);

      const auto crop = Decode(bytes, height, width, ResizeMode::kCenterCrop);
      ASSERT_TRUE(crop.ok()) << crop.status();
      const double scale = std::max(static_cast<double>(width) / c.width,
                                    static_cast<double>(height) / c.height);
      const double region_width = width / scale;
      const double region_height = height / scale;
      const double x0 = (c.width - region_width) / 2;
      const double y0 = (c.height - region_height) / 2;
      const std::vector<double> center =
          BoxResample(*full, c.width, c.height, x0, y0, x0 + region_width,
                      y0 + region_height, width, height);
      const double error = MeanAbsoluteDifference(*crop, center);
      EXPECT_LT(error, kMaxResampleError);
      // The same region shifted by a tenth of its size is clearly worse.
      const double shift = region_width / 10;
      const double x_shift = x0 >= shift ? -shift : shift;
      const std::vector<double> shifted = BoxResample(
          *full, c.width, c.height, x0 + x_shift, y0,
          x0 + x_shift + region_width, y0 + region_height, width, height);
      const double shifted_error = MeanAbsoluteDifference(*crop, shifted);
      EXPECT_GT(shifted_error, 2 * error);
    }
  }
}

TEST(DecodeImageTest, CenterCropOfSameAspectEqualsStretch) {
  SKIP_WITHOUT_IMAGES();
  const std::string jpeg = ReadFile(ImagesDir() / "retina.jpg");  // square
  const auto crop = Decode(jpeg, 100, 100, ResizeMode::kCenterCrop);
  const auto stretch = Decode(jpeg, 100, 100, ResizeMode::kStretch);
  ASSERT_TRUE(crop.ok() && stretch.ok());
  EXPECT_EQ(*crop, *stretch);
}

TEST(DecodeImageTest, GrayscaleJpegHasEqualChannels) {
  const fs::path path = fs::path(kSharedDataDir) / "imagenet-sample" /
                        "n02692877" / "n02692877_airship.JPEG";
  if (!fs::exists(path)) GTEST_SKIP() << "shared data not found at " << path;
  const std::string jpeg = ReadFile(path);
  for (const auto& [height, width] :
       std::vector<std::pair<int, int>>{{156, 350}, {64, 64}, {300, 500}}) {
    const auto decoded = Decode(jpeg, height, width, ResizeMode::kCenterCrop);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    for (size_t i = 0; i < decoded->size(); i += 3) {
      ASSERT_EQ((*decoded)[i], (*decoded)[i + 1]) << i;
      ASSERT_EQ((*decoded)[i], (*decoded)[i + 2]) << i;
    }
  }
  if (HavePil()) {
    const std::vector<PilImage> expected = PilDecode({path});
    ASSERT_EQ(expected.size(), 1u);
    const auto decoded = Decode(jpeg, 156, 350);
    ASSERT_TRUE(decoded.ok());
    EXPECT_TRUE(std::string(decoded->begin(), decoded->end()) ==
                expected[0].rgb);
  }
}

// ------------------------------------------------------ synthetic PNGs ----

TEST(DecodeImageTest, SolidColorStaysSolid) {
  const std::array<uint8_t, 3> color = {200, 31, 97};
  const std::string png = SolidRgbPng(37, 23, color);
  for (const auto& [height, width] : std::vector<std::pair<int, int>>{
           {23, 37}, {64, 64}, {8, 8}, {1, 1}, {100, 7}, {5, 300}}) {
    for (const ResizeMode mode :
         {ResizeMode::kCenterCrop, ResizeMode::kStretch}) {
      for (const Layout layout : {Layout::kHWC, Layout::kCHW}) {
        const auto decoded = Decode(png, height, width, mode, layout);
        ASSERT_TRUE(decoded.ok()) << decoded.status();
        if (layout == Layout::kHWC) {
          ExpectSolid(*decoded, color);
        } else {
          const size_t plane = size_t{1} * height * width;
          for (size_t i = 0; i < decoded->size(); ++i) {
            ASSERT_EQ((*decoded)[i], color[i / plane]);
          }
        }
      }
    }
  }
}

// A 300 x 100 image of three 100 x 100 squares: red, green, blue.
std::string ThreeSquaresPng() {
  std::string row;
  for (int x = 0; x < 300; ++x) {
    row += x < 100 ? std::string("\xFF\0\0", 3)
                   : x < 200 ? std::string("\0\xFF\0", 3)
                             : std::string("\0\0\xFF", 3);
  }
  return MakePng(300, 100, 8, kRgb, std::vector<std::string>(100, row));
}

TEST(DecodeImageTest, CenterCropKeepsTheCenter) {
  const std::string png = ThreeSquaresPng();
  // The center square, scaled to 50 x 50 (the border pixels may blend).
  const auto crop = Decode(png, 50, 50, ResizeMode::kCenterCrop);
  ASSERT_TRUE(crop.ok()) << crop.status();
  for (int y = 0; y < 50; ++y) {
    for (int x = 2; x < 48; ++x) {
      const uint8_t* pixel = crop->data() + 3 * (y * 50 + x);
      ASSERT_EQ(pixel[0], 0) << x << "," << y;
      ASSERT_EQ(pixel[1], 255) << x << "," << y;
      ASSERT_EQ(pixel[2], 0) << x << "," << y;
    }
  }
  // Exactly the center square: a crop, no resampling at all.
  const auto exact = Decode(png, 100, 100, ResizeMode::kCenterCrop);
  ASSERT_TRUE(exact.ok());
  ExpectSolid(*exact, {0, 255, 0});
  // A wide crop of a tall output keeps the aspect: 60 x 20 out of 300 x 100
  // is the whole image.
  const auto wide = Decode(png, 20, 60, ResizeMode::kCenterCrop);
  const auto stretch = Decode(png, 20, 60, ResizeMode::kStretch);
  ASSERT_TRUE(wide.ok() && stretch.ok());
  EXPECT_EQ(*wide, *stretch);
  // Stretch keeps all three squares, side by side.
  const auto squeezed = Decode(png, 10, 3, ResizeMode::kStretch);
  ASSERT_TRUE(squeezed.ok());
  for (int y = 0; y < 10; ++y) {
    for (int x = 0; x < 3; ++x) {
      const uint8_t* pixel = squeezed->data() + 3 * (y * 3 + x);
      for (int c = 0; c < 3; ++c) {
        if (c == x) {
          EXPECT_GT(pixel[c], 180) << x << "," << y;
        } else {
          EXPECT_LT(pixel[c], 40) << x << "," << y;
        }
      }
    }
  }
}

TEST(DecodeImageTest, ConvertsPngColorTypesToRgb) {
  struct Case {
    const char* what;
    int width;
    int height;
    std::string png;
    std::array<uint8_t, 3> rgb;
  };
  const Case cases[] = {
      {"gray 8", 3, 2,
       MakePng(3, 2, 8, kGray, {"\x40\x40\x40", "\x40\x40\x40"}),
       {0x40, 0x40, 0x40}},
      {"gray 1", 3, 2, MakePng(3, 2, 1, kGray, {"\xE0", "\xE0"}),
       {255, 255, 255}},
      {"gray 16", 2, 1, MakePng(2, 1, 16, kGray, {"\x12\x34\x12\x34"}),
       {0x12, 0x12, 0x12}},
      {"gray + alpha", 2, 1,
       MakePng(2, 1, 8, kGrayAlpha, {std::string("\x80\x00\x80\xFF", 4)}),
       {0x80, 0x80, 0x80}},
      {"RGBA", 2, 1,
       MakePng(2, 1, 8, kRgba,
               {std::string("\x01\x02\x03\x00\x01\x02\x03\x7F", 8)}),
       {1, 2, 3}},
      {"RGB 16", 1, 1, MakePng(1, 1, 16, kRgb, {"\xAB\xCD\x12\x34\x56\x78"}),
       {0xAB, 0x12, 0x56}},
      {"palette + tRNS", 2, 2,
       MakePng(2, 2, 2, kPalette, {"\x50", "\x50"},
               std::string("\x00\x00\x00\x0A\x14\x1E", 6),
               std::string("\x00\x00", 2)),
       {10, 20, 30}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    // At its own size (no resampling) and resampled.
    for (const auto& [height, width] :
         std::vector<std::pair<int, int>>{{c.height, c.width}, {9, 5}}) {
      const auto decoded = Decode(c.png, height, width);
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      ExpectSolid(*decoded, c.rgb);
    }
  }
}

TEST(DecodeImageTest, RejectsCorruptPngChunks) {
  std::string png = SolidRgbPng(4, 4, {1, 2, 3});
  png[png.size() - 20] ^= 1;  // inside IDAT: its CRC no longer matches
  const auto decoded = Decode(png, 4, 4);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(decoded.status().message()),
              StartsWith("PNG decode failed: "));
}

// ------------------------------------------------- synthetic JPEGs (PIL) ---

// Writes small JPEGs with PIL: solid colors with 4:2:0 chroma and odd
// sizes, grayscale, progressive and CMYK (Adobe, inverted).
constexpr char kMakeJpegs[] = R"py(
import sys
from PIL import Image
d = sys.argv[1]
Image.new("RGB", (37, 23), (200, 31, 97)).save(d + "/solid.jpg", quality=95)
Image.new("L", (29, 41), 130).save(d + "/gray.jpg", quality=95)
im = Image.linear_gradient("L").resize((61, 45)).convert("RGB")
im.save(d + "/progressive.jpg", quality=90, progressive=True)
c = Image.linear_gradient("L").resize((31, 17))
m = c.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
y = Image.new("L", (31, 17), 40)
k = c.transpose(Image.Transpose.FLIP_TOP_BOTTOM)
Image.merge("CMYK", (c, m, y, k)).save(d + "/cmyk.jpg", quality=95)
)py";

TEST(DecodeImageTest, SyntheticJpegsMatchPil) {
  if (!HavePil()) GTEST_SKIP() << "python3 with PIL is not available";
  const fs::path dir = TempPath("synthetic_jpegs");
  fs::create_directories(dir);
  std::ofstream(dir / "make.py") << kMakeJpegs;
  ASSERT_EQ(std::system(("python3 '" + (dir / "make.py").string() + "' '" +
                         dir.string() + "'")
                            .c_str()),
            0);
  struct Case {
    const char* name;
    int tolerance;  // against PIL at full size
  };
  const Case cases[] = {{"solid.jpg", 0},
                        {"gray.jpg", 0},
                        {"progressive.jpg", 0},
                        {"cmyk.jpg", 1}};
  std::vector<fs::path> paths;
  for (const Case& c : cases) paths.push_back(dir / c.name);
  const std::vector<PilImage> pil = PilDecode(paths);
  ASSERT_EQ(pil.size(), paths.size());
  for (size_t k = 0; k < paths.size(); ++k) {
    const Case& c = cases[k];
    SCOPED_TRACE(c.name);
    const std::string jpeg = ReadFile(paths[k]);
    const auto decoded = Decode(jpeg, pil[k].height, pil[k].width);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    const std::string& expected = pil[k].rgb;
    ASSERT_EQ(decoded->size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR((*decoded)[i], static_cast<uint8_t>(expected[i]),
                  c.tolerance)
          << "byte " << i;
    }
    // And resampled, in both modes.
    EXPECT_TRUE(Decode(jpeg, 64, 64, ResizeMode::kCenterCrop).ok());
    EXPECT_TRUE(Decode(jpeg, 8, 5, ResizeMode::kStretch).ok());
  }
  const std::string solid = ReadFile(dir / "solid.jpg");
  for (const auto& [height, width] :
       std::vector<std::pair<int, int>>{{23, 37}, {64, 64}, {4, 4}}) {
    const auto decoded = Decode(solid, height, width);
    ASSERT_TRUE(decoded.ok());
    ExpectSolid(*decoded, {200, 31, 97}, /*tolerance=*/3);
  }
  const auto gray = Decode(ReadFile(dir / "gray.jpg"), 50, 50);
  ASSERT_TRUE(gray.ok());
  ExpectSolid(*gray, {130, 130, 130}, /*tolerance=*/1);
}

TEST(DecodeImageTest, IsThreadSafe) {
  SKIP_WITHOUT_IMAGES();
  const std::vector<fs::path> jpegs = Jpegs();
  std::vector<std::string> inputs;
  for (size_t i = 0; i < jpegs.size() && inputs.size() < 6; i += 3) {
    inputs.push_back(ReadFile(jpegs[i]));
  }
  inputs.push_back(ReadFile(ImagesDir() / "logo.png"));
  inputs.push_back(ReadFile(ImagesDir() / "truncated.jpg"));
  std::vector<absl::StatusOr<std::vector<uint8_t>>> expected;
  for (const std::string& input : inputs) {
    expected.push_back(Decode(input, 48, 40, ResizeMode::kCenterCrop));
  }
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (size_t i = 0; i < inputs.size(); ++i) {
          const size_t k = (i + t) % inputs.size();
          const auto decoded = Decode(inputs[k], 48, 40,
                                      ResizeMode::kCenterCrop);
          if (decoded.ok() != expected[k].ok() ||
              (decoded.ok() && *decoded != *expected[k])) {
            ++mismatches[t];
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << t;
}

}  // namespace
}  // namespace shardloader
