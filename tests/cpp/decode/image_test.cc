#include "shardloader/decode/image.h"

#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
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

#define SKIP_WITHOUT_IMAGES()                                            \
  if (!fs::is_directory(ImagesDir())) {                                  \
    GTEST_SKIP() << "shared data not found at " << ImagesDir().string(); \
  }

std::string ReadFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

absl::StatusOr<std::vector<uint8_t>> Decode(std::string_view encoded, const ImageOptions& options,
                                            uint64_t seed) {
  std::vector<uint8_t> output(size_t{3} * options.height * options.width);
  const absl::Status status = DecodeImage(encoded, options, seed, output.data());
  if (!status.ok()) return status;
  return output;
}

ImageOptions Options(int height, int width, ResizeMode resize = ResizeMode::kStretch,
                     Layout layout = Layout::kHWC) {
  ImageOptions options;
  options.height = height;
  options.width = width;
  options.resize = resize;
  options.layout = layout;
  return options;
}

absl::StatusOr<std::vector<uint8_t>> Decode(std::string_view encoded, int height, int width,
                                            ResizeMode resize = ResizeMode::kStretch,
                                            Layout layout = Layout::kHWC, uint64_t seed = 0) {
  return Decode(encoded, Options(height, width, resize, layout), seed);
}

// `hwc` (width pixels per row) mirrored left-right.
std::vector<uint8_t> MirrorHwc(const std::vector<uint8_t>& hwc, int width) {
  std::vector<uint8_t> mirrored(hwc.size());
  const size_t height = hwc.size() / 3 / width;
  for (size_t y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        mirrored[(y * width + x) * 3 + c] = hwc[(y * width + (width - 1 - x)) * 3 + c];
      }
    }
  }
  return mirrored;
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
    if (entry.path().extension() == ".jpg" && entry.path().filename() != "truncated.jpg") {
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

void AppendChunk(std::string_view type, std::string_view data, std::string* png) {
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
std::string MakePng(uint32_t width, uint32_t height, uint8_t bit_depth, PngColor color,
                    const std::vector<std::string>& rows, std::string_view palette = "",
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

void ExpectSolid(const std::vector<uint8_t>& pixels, std::array<uint8_t, 3> rgb,
                 int tolerance = 0) {
  for (size_t i = 0; i < pixels.size(); ++i) {
    ASSERT_NEAR(pixels[i], rgb[i % 3], tolerance) << "byte " << i;
  }
}

// ------------------------------------------------------- PIL as oracle ----

bool HavePil() { return std::system("python3 -c 'import PIL' >/dev/null 2>&1") == 0; }

// A scratch path private to this process (CTest runs tests in parallel
// processes that share TempDir()).
fs::path TempPath(const std::string& name) {
  return fs::path(testing::TempDir()) / (name + "-" + std::to_string(::getpid()));
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
  std::string command = "python3 '" + (dir / "decode.py").string() + "' '" + dir.string() + "'";
  for (const fs::path& path : paths) command += " '" + path.string() + "'";
  if (std::system(command.c_str()) != 0) return {};
  std::vector<PilImage> images(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    std::ifstream(dir / (std::to_string(i) + ".size")) >> images[i].width >> images[i].height;
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
    EXPECT_EQ(DecodeImage(png, options, /*seed=*/0, &unused).code(),
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
  const auto decoded = Decode(ReadFile(ImagesDir() / "chessboard_GRAY_U16.tif"), 8, 8);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(decoded.status().message(), "not a JPEG or PNG image");
}

TEST(DecodeImageTest, RejectsTruncatedJpeg) {
  SKIP_WITHOUT_IMAGES();
  const std::string truncated = ReadFile(ImagesDir() / "truncated.jpg");
  for (const ResizeMode mode :
       {ResizeMode::kCenterCrop, ResizeMode::kStretch, ResizeMode::kRandomResizedCrop}) {
    const auto decoded = Decode(truncated, 64, 64, mode);
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(decoded.status().message()), StartsWith("JPEG decode failed: "));
  }
}

// libjpeg-turbo only warns about a JPEG cut inside its entropy-coded data
// (and fills the rest with gray); that must be an error too.
TEST(DecodeImageTest, RejectsJpegCutInsideTheScan) {
  SKIP_WITHOUT_IMAGES();
  const std::string jpeg = ReadFile(ImagesDir() / "444.jpg");
  for (const double fraction : {0.5, 0.9, 0.99}) {
    const std::string cut = jpeg.substr(0, jpeg.size() * fraction);
    for (const auto& [height, width] : std::vector<std::pair<int, int>>{{453, 680}, {64, 64}}) {
      const auto decoded = Decode(cut, height, width);
      EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << fraction;
      EXPECT_THAT(std::string(decoded.status().message()), StartsWith("JPEG decode failed: "));
    }
  }
}

// Extraneous bytes before a marker only make libjpeg warn; the pixels are
// intact (PIL accepts such files, and real datasets contain them).
TEST(DecodeImageTest, AcceptsExtraneousBytesBeforeAMarker) {
  SKIP_WITHOUT_IMAGES();
  const std::string jpeg = ReadFile(ImagesDir() / "444.jpg");
  ASSERT_EQ(jpeg.substr(jpeg.size() - 2), "\xff\xd9");
  const std::string padded = jpeg.substr(0, jpeg.size() - 2) + std::string(7, '\x11') + "\xff\xd9";
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
  for (const char* name : {"422-odd-width.jpg", "palette_color.png", "foo3x5x4indexed.png"}) {
    const std::string bytes = ReadFile(ImagesDir() / name);
    const size_t step = std::max<size_t>(1, bytes.size() / 300);
    for (size_t size = 0; size < bytes.size(); size += step) {
      const auto decoded = Decode(bytes.substr(0, size), 16, 16);
      EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << name << " cut at " << size;
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
      const size_t range = round % 2 == 0 ? std::min<size_t>(bytes.size(), 700) : bytes.size();
      for (int i = 0; i < 4; ++i) {
        corrupt[2 + random() % (range - 2)] = static_cast<char>(random());
      }
      const auto decoded = Decode(corrupt, 24, 40, ResizeMode::kCenterCrop);
      if (!decoded.ok()) {
        EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << decoded.status();
      }
    }
  }
}

TEST(DecodeImageTest, RejectsHugeDimensionsBeforeAllocating) {
  // A 100000 x 100000 PNG header with a single row of data.
  const std::string png = MakePng(100000, 100000, 8, kGray, {std::string(100000, '\0')});
  const auto decoded = Decode(png, 8, 8);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(decoded.status().message()), HasSubstr("too large"));

  ImageOptions options;
  options.height = 1 << 15;
  options.width = 1 << 15;
  uint8_t unused = 0;
  EXPECT_EQ(DecodeImage(png, options, /*seed=*/0, &unused).code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------- real files ----

// Decodes `encoded` to height x width in every resize mode, checks that CHW
// is the transpose of HWC, and returns the HWC outputs (empty on failure).
std::vector<std::vector<uint8_t>> DecodeInEveryMode(const std::string& encoded, int height,
                                                    int width) {
  std::vector<std::vector<uint8_t>> outputs;
  for (const ResizeMode mode :
       {ResizeMode::kCenterCrop, ResizeMode::kStretch, ResizeMode::kRandomResizedCrop}) {
    const auto hwc = Decode(encoded, height, width, mode, Layout::kHWC, /*seed=*/7);
    const auto chw = Decode(encoded, height, width, mode, Layout::kCHW, /*seed=*/7);
    EXPECT_TRUE(hwc.ok()) << hwc.status();
    EXPECT_TRUE(chw.ok()) << chw.status();
    if (!hwc.ok() || !chw.ok()) return {};
    EXPECT_EQ(*chw, HwcToChw(*hwc));
    outputs.push_back(*hwc);
  }
  return outputs;
}

TEST(DecodeImageTest, DecodesEveryJpeg) {
  SKIP_WITHOUT_IMAGES();
  const std::vector<fs::path> jpegs = Jpegs();
  EXPECT_GE(jpegs.size(), 25u);
  for (const fs::path& path : jpegs) {
    SCOPED_TRACE(path.filename().string());
    const std::string jpeg = ReadFile(path);
    for (const auto& hwc : DecodeInEveryMode(jpeg, 64, 64)) {
      // A photo, not a constant (e.g. gray-filled) image.
      const auto [low, high] = std::minmax_element(hwc.begin(), hwc.end());
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
    DecodeInEveryMode(ReadFile(path), 64, 48);
  }
}

// EXIF orientation is not applied: the orientation variants hold the same
// pixels and decode identically.
TEST(DecodeImageTest, IgnoresExifOrientation) {
  SKIP_WITHOUT_IMAGES();
  const fs::path dir = ImagesDir() / "orientation";
  const auto reference = Decode(ReadFile(dir / "padlock-406986_640_no_exif.jpg"), 426, 640);
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
  for (const char* name : {"420-odd-both.jpg", "420-odd-width.jpg", "420-odd-height.jpg",
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
    for (const ResizeMode mode : {ResizeMode::kStretch, ResizeMode::kCenterCrop}) {
      const auto decoded = Decode(bytes, pil.height, pil.width, mode);
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      EXPECT_TRUE(std::string(decoded->begin(), decoded->end()) == pil.rgb);
    }
    const auto chw = Decode(bytes, pil.height, pil.width, ResizeMode::kStretch, Layout::kCHW);
    ASSERT_TRUE(chw.ok());
    EXPECT_EQ(*chw, HwcToChw(std::vector<uint8_t>(pil.rgb.begin(), pil.rgb.end())));
  }
}

// Area average of the region [x0, x1) x [y0, y1) (pixel units, clipped to
// the image) of an HWC image, sampled to width x height: a reference for
// the resampler.
std::vector<double> BoxResample(const std::vector<uint8_t>& image, int image_width,
                                int image_height, double x0, double y0, double x1, double y1,
                                int width, int height) {
  std::vector<double> out(size_t{3} * width * height);
  const double step_x = (x1 - x0) / width;
  const double step_y = (y1 - y0) / height;
  auto span = [](double start, double end, int limit) {
    const int low = std::clamp(static_cast<int>(start), 0, limit - 1);
    const int high = std::clamp(static_cast<int>(end), low + 1, limit);
    return std::pair<int, int>(low, high);
  };
  for (int oy = 0; oy < height; ++oy) {
    const auto [top, bottom] = span(y0 + oy * step_y, y0 + (oy + 1) * step_y, image_height);
    for (int ox = 0; ox < width; ++ox) {
      const auto [left, right] = span(x0 + ox * step_x, x0 + (ox + 1) * step_x, image_width);
      for (int c = 0; c < 3; ++c) {
        double sum = 0;
        for (int y = top; y < bottom; ++y) {
          for (int x = left; x < right; ++x) {
            sum += image[(size_t{3} * y * image_width) + 3 * x + c];
          }
        }
        out[(size_t{3} * oy * width) + 3 * ox + c] = sum / ((bottom - top) * (right - left));
      }
    }
  }
  return out;
}

// The triangle filter and DCT-domain scaling differ from a box
// filter by a few levels on average; a misplaced region differs by far more.
constexpr double kMaxResampleError = 7.0;

double MeanAbsoluteDifference(const std::vector<uint8_t>& a, const std::vector<double>& b) {
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
  for (const Case& c :
       {Case{"hubble_deep_field.jpg", 1000, 872}, Case{"420-odd-both.jpg", 1277, 851},
        Case{"dog-3277414_640.jpg", 427, 640}, Case{"logo.png", 500, 500}}) {
    SCOPED_TRACE(c.name);
    const std::string bytes = ReadFile(ImagesDir() / c.name);
    const auto full = Decode(bytes, c.height, c.width);
    ASSERT_TRUE(full.ok()) << full.status();
    for (const auto& [height, width] :
         std::vector<std::pair<int, int>>{{64, 64}, {48, 80}, {90, 30}}) {
      SCOPED_TRACE(std::to_string(height) + "x" + std::to_string(width));
      const auto stretch = Decode(bytes, height, width, ResizeMode::kStretch);
      ASSERT_TRUE(stretch.ok()) << stretch.status();
      const std::vector<double> whole =
          BoxResample(*full, c.width, c.height, 0, 0, c.width, c.height, width, height);
      EXPECT_LT(MeanAbsoluteDifference(*stretch, whole), kMaxResampleError);

      const auto crop = Decode(bytes, height, width, ResizeMode::kCenterCrop);
      ASSERT_TRUE(crop.ok()) << crop.status();
      const double scale =
          std::max(static_cast<double>(width) / c.width, static_cast<double>(height) / c.height);
      const double region_width = width / scale;
      const double region_height = height / scale;
      const double x0 = (c.width - region_width) / 2;
      const double y0 = (c.height - region_height) / 2;
      const std::vector<double> center = BoxResample(
          *full, c.width, c.height, x0, y0, x0 + region_width, y0 + region_height, width, height);
      const double error = MeanAbsoluteDifference(*crop, center);
      EXPECT_LT(error, kMaxResampleError);
      // The same region shifted by a tenth of its size is clearly worse.
      const double shift = region_width / 10;
      const double x_shift = x0 >= shift ? -shift : shift;
      const std::vector<double> shifted =
          BoxResample(*full, c.width, c.height, x0 + x_shift, y0, x0 + x_shift + region_width,
                      y0 + region_height, width, height);
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
  const fs::path path =
      fs::path(kSharedDataDir) / "imagenet-sample" / "n02692877" / "n02692877_airship.JPEG";
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
    EXPECT_TRUE(std::string(decoded->begin(), decoded->end()) == expected[0].rgb);
  }
}

// ------------------------------------------------------ synthetic PNGs ----

TEST(DecodeImageTest, SolidColorStaysSolid) {
  const std::array<uint8_t, 3> color = {200, 31, 97};
  const std::string png = SolidRgbPng(37, 23, color);
  for (const auto& [height, width] :
       std::vector<std::pair<int, int>>{{23, 37}, {64, 64}, {8, 8}, {1, 1}, {100, 7}, {5, 300}}) {
    for (const ResizeMode mode :
         {ResizeMode::kCenterCrop, ResizeMode::kStretch, ResizeMode::kRandomResizedCrop}) {
      for (const Layout layout : {Layout::kHWC, Layout::kCHW}) {
        ImageOptions options = Options(height, width, mode, layout);
        options.random_flip = true;
        const auto decoded = Decode(png, options, /*seed=*/height * width);
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
    row += x < 100   ? std::string("\xFF\0\0", 3)
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
      {"gray 8",
       3,
       2,
       MakePng(3, 2, 8, kGray, {"\x40\x40\x40", "\x40\x40\x40"}),
       {0x40, 0x40, 0x40}},
      {"gray 1", 3, 2, MakePng(3, 2, 1, kGray, {"\xE0", "\xE0"}), {255, 255, 255}},
      {"gray 16", 2, 1, MakePng(2, 1, 16, kGray, {"\x12\x34\x12\x34"}), {0x12, 0x12, 0x12}},
      {"gray + alpha",
       2,
       1,
       MakePng(2, 1, 8, kGrayAlpha, {std::string("\x80\x00\x80\xFF", 4)}),
       {0x80, 0x80, 0x80}},
      {"RGBA",
       2,
       1,
       MakePng(2, 1, 8, kRgba, {std::string("\x01\x02\x03\x00\x01\x02\x03\x7F", 8)}),
       {1, 2, 3}},
      {"RGB 16", 1, 1, MakePng(1, 1, 16, kRgb, {"\xAB\xCD\x12\x34\x56\x78"}), {0xAB, 0x12, 0x56}},
      {"palette + tRNS",
       2,
       2,
       MakePng(2, 2, 2, kPalette, {"\x50", "\x50"}, std::string("\x00\x00\x00\x0A\x14\x1E", 6),
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
  EXPECT_THAT(std::string(decoded.status().message()), StartsWith("PNG decode failed: "));
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
  ASSERT_EQ(
      std::system(("python3 '" + (dir / "make.py").string() + "' '" + dir.string() + "'").c_str()),
      0);
  struct Case {
    const char* name;
    int tolerance;  // against PIL at full size
  };
  const Case cases[] = {{"solid.jpg", 0}, {"gray.jpg", 0}, {"progressive.jpg", 0}, {"cmyk.jpg", 1}};
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
      ASSERT_NEAR((*decoded)[i], static_cast<uint8_t>(expected[i]), c.tolerance) << "byte " << i;
    }
    // And resampled, in both modes.
    EXPECT_TRUE(Decode(jpeg, 64, 64, ResizeMode::kCenterCrop).ok());
    EXPECT_TRUE(Decode(jpeg, 8, 5, ResizeMode::kStretch).ok());
  }
  const std::string solid = ReadFile(dir / "solid.jpg");
  for (const auto& [height, width] : std::vector<std::pair<int, int>>{{23, 37}, {64, 64}, {4, 4}}) {
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
          const auto decoded = Decode(inputs[k], 48, 40, ResizeMode::kCenterCrop);
          if (decoded.ok() != expected[k].ok() || (decoded.ok() && *decoded != *expected[k])) {
            ++mismatches[t];
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << t;
}

// ------------------------------------------------- random resized crop ----

ImageOptions CropOptions(int height = 224, int width = 224) {
  return Options(height, width, ResizeMode::kRandomResizedCrop);
}

bool IsInside(const CropBox& box, int width, int height) {
  return box.x >= 0 && box.y >= 0 && box.width >= 1 && box.height >= 1 &&
         box.x + box.width <= width && box.y + box.height <= height;
}

// Whether `box` can come from one of torchvision's attempts: its sides are
// those of a box with an area fraction in [min_scale, max_scale] and an
// aspect ratio in [min_ratio, max_ratio], each rounded to an integer.
bool IsAttemptBox(const CropBox& box, int width, int height, const ImageOptions& options) {
  const double w = box.width;
  const double h = box.height;
  const double area = static_cast<double>(width) * height;
  return (w + 0.5) * (h + 0.5) >= options.min_scale * area &&
         (w - 0.5) * (h - 0.5) <= options.max_scale * area &&
         (w + 0.5) / (h - 0.5) >= options.min_ratio && (w - 0.5) / (h + 0.5) <= options.max_ratio;
}

TEST(RandomResizedCropTest, BoxesFollowTorchvisionsRanges) {
  std::vector<ImageOptions> variants(3, CropOptions());
  variants[1].min_scale = 0.5;
  variants[1].max_scale = 0.6;
  variants[1].min_ratio = 1;
  variants[1].max_ratio = 1;
  variants[2].min_scale = 0.25;
  variants[2].min_ratio = 0.5;
  variants[2].max_ratio = 2;
  for (const auto& [width, height] : std::vector<std::pair<int, int>>{
           {500, 375}, {375, 500}, {1000, 1000}, {64, 48}, {1277, 851}}) {
    for (size_t v = 0; v < variants.size(); ++v) {
      for (uint64_t seed = 0; seed < 500; ++seed) {
        const CropBox box = SampleRandomResizedCrop(width, height, variants[v], seed);
        ASSERT_TRUE(IsInside(box, width, height))
            << width << "x" << height << " variant " << v << " seed " << seed;
        ASSERT_TRUE(IsAttemptBox(box, width, height, variants[v]))
            << width << "x" << height << " variant " << v << " seed " << seed << ": " << box.width
            << "x" << box.height;
      }
    }
  }
}

// When no attempt fits, torchvision takes the central crop of the whole
// width (or height) with the aspect ratio clamped to the range, sides
// rounded half to even as Python's round() does.
TEST(RandomResizedCropTest, FallsBackToACentralCrop) {
  struct Case {
    const char* what;
    int width;
    int height;
    double min_scale, max_scale, min_ratio, max_ratio;
    CropBox expected;
  };
  const Case cases[] = {
      // Any box of at least 8% of the area is too wide for the height.
      {"wide", 1000, 10, 0.08, 1, 3.0 / 4, 4.0 / 3, {493, 0, 13, 10}},
      {"tall", 10, 1000, 0.08, 1, 3.0 / 4, 4.0 / 3, {0, 493, 10, 13}},
      // More than the whole area: the ratio is in range, the whole image.
      {"scale over 1", 300, 300, 2, 3, 3.0 / 4, 4.0 / 3, {0, 0, 300, 300}},
      // A square of the whole area does not fit a 3:2 image.
      {"whole square", 300, 200, 1, 1, 1, 1, {50, 0, 200, 200}},
      // 10 / 4 = 2.5 rounds to 2, not 3.
      {"ties to even", 10, 100, 0.08, 1, 4, 4, {0, 49, 10, 2}},
      {"one pixel", 1, 1, 0.08, 1, 3.0 / 4, 4.0 / 3, {0, 0, 1, 1}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ImageOptions options = CropOptions();
    options.min_scale = c.min_scale;
    options.max_scale = c.max_scale;
    options.min_ratio = c.min_ratio;
    options.max_ratio = c.max_ratio;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      const CropBox box = SampleRandomResizedCrop(c.width, c.height, options, seed);
      EXPECT_EQ(std::tie(box.x, box.y, box.width, box.height),
                std::tie(c.expected.x, c.expected.y, c.expected.width, c.expected.height))
          << "seed " << seed << ": " << box.x << "," << box.y << " " << box.width << "x"
          << box.height;
    }
  }
}

TEST(RandomResizedCropTest, SameSeedSameBoxOtherSeedsOtherBoxes) {
  const ImageOptions options = CropOptions();
  std::set<std::tuple<int, int, int, int>> boxes;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    const CropBox a = SampleRandomResizedCrop(500, 375, options, seed);
    const CropBox b = SampleRandomResizedCrop(500, 375, options, seed);
    ASSERT_EQ(std::tie(a.x, a.y, a.width, a.height), std::tie(b.x, b.y, b.width, b.height));
    boxes.insert({a.x, a.y, a.width, a.height});
  }
  EXPECT_GE(boxes.size(), 995u);
  // Seeds that differ only in their top bit.
  const CropBox low = SampleRandomResizedCrop(500, 375, options, 5);
  const CropBox high = SampleRandomResizedCrop(500, 375, options, 5 | uint64_t{1} << 63);
  EXPECT_NE(std::tie(low.x, low.y, low.width, low.height),
            std::tie(high.x, high.y, high.width, high.height));
}

// The distribution over seeds is torchvision's. On a square image an
// attempt with area fraction s (uniform in [0.08, 1)) and log aspect ratio
// u (uniform in [-L, L), L = log(4/3)) fits iff s <= exp(-|u|), and the
// fallback (all 10 attempts failing, probability 0.142^10) never happens.
// So the area fraction has mean
//   E[s | fits] = integral over u in [0, L] of (e^-2u - 0.08^2) / 2
//               / integral over u in [0, L] of (e^-u - 0.08)
//               = ((1 - 9/16) / 2 - 0.0064 L) / 2 / (1 - 3/4 - 0.08 L),
// 0.4778 (a version without the rejection would give 0.54); the log ratio
// is symmetric around 0 and the position uniform.
TEST(RandomResizedCropTest, FollowsTorchvisionsDistribution) {
  const ImageOptions options = CropOptions();
  const double log_ratio = std::log(4.0 / 3);
  const double expected_area =
      ((1 - 9.0 / 16) / 2 - 0.0064 * log_ratio) / 2 / (1 - 3.0 / 4 - 0.08 * log_ratio);
  ASSERT_NEAR(expected_area, 0.4778, 1e-4);
  constexpr int kSize = 1000;
  constexpr int kSamples = 40000;
  double area_sum = 0;
  double log_ratio_sum = 0;
  int wider = 0;
  int taller = 0;
  double x_sum = 0;
  double y_sum = 0;
  int positioned = 0;
  for (uint64_t seed = 0; seed < kSamples; ++seed) {
    const CropBox box = SampleRandomResizedCrop(kSize, kSize, options, seed);
    area_sum += static_cast<double>(box.width) * box.height / kSize / kSize;
    log_ratio_sum += std::log(static_cast<double>(box.width) / box.height);
    wider += box.width > box.height;
    taller += box.width < box.height;
    if (box.width < kSize && box.height < kSize) {
      x_sum += static_cast<double>(box.x) / (kSize - box.width);
      y_sum += static_cast<double>(box.y) / (kSize - box.height);
      ++positioned;
    }
  }
  // About four standard errors.
  EXPECT_NEAR(area_sum / kSamples, expected_area, 0.005);
  EXPECT_NEAR(log_ratio_sum / kSamples, 0, 0.004);
  EXPECT_NEAR(static_cast<double>(wider) / (wider + taller), 0.5, 0.012);
  ASSERT_GT(positioned, kSamples / 2);
  EXPECT_NEAR(x_sum / positioned, 0.5, 0.008);
  EXPECT_NEAR(y_sum / positioned, 0.5, 0.008);
}

TEST(RandomResizedCropTest, FlipIsAFairCoin) {
  int flips = 0;
  for (uint64_t seed = 0; seed < 10000; ++seed) {
    flips += SampleHorizontalFlip(seed);
    ASSERT_EQ(SampleHorizontalFlip(seed), SampleHorizontalFlip(seed));
  }
  EXPECT_NEAR(flips / 10000.0, 0.5, 0.02);
}

TEST(DecodeImageTest, RejectsBadCropRanges) {
  const std::string png = SolidRgbPng(8, 8, {1, 2, 3});
  const double nan = std::nan("");
  const double inf = INFINITY;
  const std::vector<std::array<double, 4>> bad = {
      {0, 1, 0.75, 1.33},     {-0.1, 1, 0.75, 1.33}, {0.5, 0.4, 0.75, 1.33}, {nan, 1, 0.75, 1.33},
      {0.1, inf, 0.75, 1.33}, {0.1, 1, 0, 1.33},     {0.1, 1, -1, 1.33},     {0.1, 1, 1.5, 1.33},
      {0.1, 1, 0.75, nan},    {0.1, 1, 0.75, inf}};
  for (const auto& [min_scale, max_scale, min_ratio, max_ratio] : bad) {
    ImageOptions options = CropOptions(4, 4);
    options.min_scale = min_scale;
    options.max_scale = max_scale;
    options.min_ratio = min_ratio;
    options.max_ratio = max_ratio;
    const auto decoded = Decode(png, options, 1);
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument)
        << min_scale << " " << max_scale << " " << min_ratio << " " << max_ratio;
    // Other modes ignore the ranges.
    options.resize = ResizeMode::kCenterCrop;
    EXPECT_TRUE(Decode(png, options, 1).ok());
  }
}

// A TurboJPEG decode of a whole JPEG at scale eighths / 8: the reference the
// region decoder is compared with.
struct Rgb {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // HWC
};

Rgb TurboJpegDecode(const std::string& jpeg, int eighths) {
  Rgb out;
  tjhandle handle = tjInitDecompress();
  int width = 0;
  int height = 0;
  int subsampling = 0;
  int colorspace = 0;
  const auto* bytes = reinterpret_cast<const unsigned char*>(jpeg.data());
  // TurboJPEG 2.1 rejects 4:1:0 and 2x4 headers after reading them, yet
  // decodes them (libjpeg-turbo issue #323).
  tjDecompressHeader3(handle, bytes, jpeg.size(), &width, &height, &subsampling, &colorspace);
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  out.width = (width * eighths + 7) / 8;
  out.height = (height * eighths + 7) / 8;
  std::vector<uint8_t> decoded(size_t{4} * out.width * out.height);
  if (tjDecompress2(handle, bytes, jpeg.size(), decoded.data(), out.width, 0, out.height,
                    cmyk ? TJPF_CMYK : TJPF_RGB, 0) != 0) {
    ADD_FAILURE() << tjGetErrorStr2(handle);
  }
  tjDestroy(handle);
  const size_t num_pixels = size_t{1} * out.width * out.height;
  out.pixels.resize(num_pixels * 3);
  for (size_t i = 0; i < num_pixels; ++i) {
    for (int c = 0; c < 3; ++c) {
      // Inverted (Adobe) CMYK: R = C * K / 255 and so on.
      out.pixels[3 * i + c] =
          cmyk ? static_cast<uint8_t>((decoded[4 * i + c] * decoded[4 * i + 3] + 127) / 255)
               : decoded[3 * i + c];
    }
  }
  return out;
}

std::pair<int, int> JpegSize(const std::string& jpeg) {
  tjhandle handle = tjInitDecompress();
  int width = 0;
  int height = 0;
  int subsampling = 0;
  int colorspace = 0;
  tjDecompressHeader3(handle, reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size(),
                      &width, &height, &subsampling, &colorspace);
  tjDestroy(handle);
  return {width, height};
}

// PIL's BILINEAR resampling (Image.resize) of [low, high) of an axis whose
// pixels are [bound_begin, bound_end), in double precision: output pixel i
// is the average of the pixels p of the bounds weighted by a triangle
// centered at low + (i + 0.5) * scale, widened by the shrink factor.
struct Weights {
  int first = 0;                // the pixel of weights[0]
  std::vector<double> weights;  // the nonzero ones, normalized
};

std::vector<Weights> AxisWeights(double low, double high, int bound_begin, int bound_end,
                                 int size) {
  const double scale = (high - low) / size;
  const double filter_scale = std::max(1.0, scale);
  std::vector<Weights> axis(size);
  for (int i = 0; i < size; ++i) {
    const double center = low + (i + 0.5) * scale;
    axis[i].first = std::max(bound_begin, static_cast<int>(std::floor(center - filter_scale)) - 1);
    const int end = std::min(bound_end, static_cast<int>(std::ceil(center + filter_scale)) + 1);
    double total = 0;
    for (int p = axis[i].first; p < end; ++p) {
      const double w = std::max(0.0, 1 - std::abs(p + 0.5 - center) / filter_scale);
      axis[i].weights.push_back(w);
      total += w;
    }
    for (double& w : axis[i].weights) w /= total;
  }
  return axis;
}

// The region [x0, x1) x [y0, y1) (pixels) of `image`, resampled to
// width x height by a filter that sees the whole image, or with `crop` only
// the pixels that the region covers (the crop is then an image of its own).
std::vector<uint8_t> ResizeRegion(const Rgb& image, double x0, double y0, double x1, double y1,
                                  int width, int height, bool crop) {
  const int bx0 = crop ? static_cast<int>(std::floor(x0 + 1e-9)) : 0;
  const int by0 = crop ? static_cast<int>(std::floor(y0 + 1e-9)) : 0;
  const int bx1 = crop ? static_cast<int>(std::ceil(x1 - 1e-9)) : image.width;
  const int by1 = crop ? static_cast<int>(std::ceil(y1 - 1e-9)) : image.height;
  const std::vector<Weights> wx = AxisWeights(x0, x1, bx0, bx1, width);
  const std::vector<Weights> wy = AxisWeights(y0, y1, by0, by1, height);
  // Horizontally, every row of the bounds.
  std::vector<double> rows(size_t{3} * width * (by1 - by0));
  for (int y = by0; y < by1; ++y) {
    for (int ox = 0; ox < width; ++ox) {
      for (size_t t = 0; t < wx[ox].weights.size(); ++t) {
        const uint8_t* pixel = &image.pixels[(size_t{1} * y * image.width + wx[ox].first + t) * 3];
        for (int c = 0; c < 3; ++c) {
          rows[(size_t{1} * (y - by0) * width + ox) * 3 + c] += wx[ox].weights[t] * pixel[c];
        }
      }
    }
  }
  std::vector<uint8_t> out(size_t{3} * width * height);
  for (int oy = 0; oy < height; ++oy) {
    for (size_t i = 0; i < size_t{3} * width; ++i) {
      double sum = 0;
      for (size_t t = 0; t < wy[oy].weights.size(); ++t) {
        sum += wy[oy].weights[t] * rows[(wy[oy].first + t - by0) * size_t{3} * width + i];
      }
      out[size_t{3} * oy * width + i] =
          static_cast<uint8_t>(std::clamp(std::floor(sum + 0.5), 0.0, 255.0));
    }
  }
  return out;
}

// The kRandomResizedCrop output for `box` of a full_width x full_height
// image, from `image`, a decode of it at any scale.
std::vector<uint8_t> ResizeBox(const Rgb& image, const CropBox& box, int full_width,
                               int full_height, int width, int height) {
  const double x_scale = static_cast<double>(image.width) / full_width;
  const double y_scale = static_cast<double>(image.height) / full_height;
  return ResizeRegion(image, box.x * x_scale, box.y * y_scale, (box.x + box.width) * x_scale,
                      (box.y + box.height) * y_scale, width, height,
                      /*crop=*/true);
}

struct Difference {
  int max = 0;
  double mean = 0;
};

Difference Compare(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  Difference difference;
  EXPECT_EQ(a.size(), b.size());
  double sum = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const int d = std::abs(a[i] - b[i]);
    difference.max = std::max(difference.max, d);
    sum += d;
  }
  difference.mean = sum / a.size();
  return difference;
}

// Large synthetic JPEGs that edge/ lacks: progressive (4:2:0 and 4:4:4),
// grayscale (baseline and progressive) and CMYK. Empty if PIL is missing.
constexpr char kMakeLargeJpegs[] = R"py(
import sys
from PIL import Image
d = sys.argv[1]
size = (517, 389)
a = Image.effect_mandelbrot(size, (-2.2, -1.3, 0.9, 1.3), 64)
b = a.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
c = Image.radial_gradient("L").resize(size)
rgb = Image.merge("RGB", (a, b, c))
rgb.save(d + "/progressive420.jpg", quality=90, progressive=True, subsampling=2)
rgb.save(d + "/progressive444.jpg", quality=90, progressive=True, subsampling=0)
a.save(d + "/gray.jpg", quality=90)
a.save(d + "/gray-progressive.jpg", quality=90, progressive=True)
k = Image.linear_gradient("L").resize(size)
Image.merge("CMYK", (a, b, c, k)).save(d + "/cmyk.jpg", quality=90)
)py";

std::vector<fs::path> LargeSyntheticJpegs() {
  if (!HavePil()) return {};
  const fs::path dir = TempPath("large_synthetic_jpegs");
  fs::create_directories(dir);
  std::ofstream(dir / "make.py") << kMakeLargeJpegs;
  if (std::system(
          ("python3 '" + (dir / "make.py").string() + "' '" + dir.string() + "'").c_str()) != 0) {
    ADD_FAILURE() << "cannot write the synthetic JPEGs";
    return {};
  }
  return {dir / "progressive420.jpg", dir / "progressive444.jpg", dir / "gray.jpg",
          dir / "gray-progressive.jpg", dir / "cmyk.jpg"};
}

// The smallest DCT scale k / 8, k in {1, 2, 4, 8}, at which the crop box
// covers the output (image.h): the box is scaled with the image, whose size
// is ceil(n k / 8).
int ChooseEighths(const CropBox& box, int full_width, int full_height, int width, int height) {
  for (const int k : {1, 2, 4}) {
    const double x_scale = static_cast<double>((full_width * k + 7) / 8) / full_width;
    const double y_scale = static_cast<double>((full_height * k + 7) / 8) / full_height;
    if (box.width * x_scale >= width && box.height * y_scale >= height) {
      return k;
    }
  }
  return 8;
}

// The region decoder (a DCT-scaled decode of only the rows and iMCU columns
// the crop needs) gives what decoding the whole image at the same scale and
// resampling the crop from it gives, up to the chroma upsampling at the
// edges of the decoded part.
TEST(DecodeImageTest, RandomResizedCropMatchesAWholeDecodeAtTheSameScale) {
  SKIP_WITHOUT_IMAGES();
  std::vector<fs::path> paths = Jpegs();
  for (const fs::path& path : LargeSyntheticJpegs()) paths.push_back(path);
  Difference worst;
  int num_scaled = 0;
  for (const fs::path& path : paths) {
    SCOPED_TRACE(path.filename().string());
    const std::string jpeg = ReadFile(path);
    const auto [full_width, full_height] = JpegSize(jpeg);
    ASSERT_GT(full_width, 0);
    for (const auto& [height, width] :
         std::vector<std::pair<int, int>>{{224, 224}, {64, 64}, {37, 100}}) {
      for (uint64_t seed = 0; seed < 6; ++seed) {
        SCOPED_TRACE(std::to_string(height) + "x" + std::to_string(width) + " seed " +
                     std::to_string(seed));
        const ImageOptions options = CropOptions(height, width);
        const CropBox box = SampleRandomResizedCrop(full_width, full_height, options, seed);
        const int eighths = ChooseEighths(box, full_width, full_height, width, height);
        num_scaled += eighths < 8;
        const std::vector<uint8_t> expected =
            ResizeBox(TurboJpegDecode(jpeg, eighths), box, full_width, full_height, width, height);
        const auto decoded = Decode(jpeg, options, seed);
        ASSERT_TRUE(decoded.ok()) << decoded.status();
        const Difference difference = Compare(*decoded, expected);
        EXPECT_LE(difference.max, 1);
        EXPECT_LE(difference.mean, 0.3);
        worst.max = std::max(worst.max, difference.max);
        worst.mean = std::max(worst.mean, difference.mean);
      }
    }
  }
  // Most crops shrink enough for a DCT scale below 1.
  EXPECT_GT(num_scaled, static_cast<int>(paths.size()) * 6);
  std::cout << "worst difference: max " << worst.max << ", mean " << worst.mean << "\n";
}

// PNGs, and JPEGs too small for DCT scaling, are decoded whole: the crop is
// the box of the full-size decode, resampled.
TEST(DecodeImageTest, RandomResizedCropOfAWholeDecode) {
  SKIP_WITHOUT_IMAGES();
  std::vector<std::string> inputs = {ThreeSquaresPng()};
  for (const fs::path& path : Pngs()) inputs.push_back(ReadFile(path));
  if (HavePil()) {
    // 37x23 solid, 29x41 gray, 61x45 progressive, 31x17 CMYK.
    const fs::path dir = TempPath("synthetic_jpegs");
    fs::create_directories(dir);
    std::ofstream(dir / "make.py") << kMakeJpegs;
    ASSERT_EQ(std::system(
                  ("python3 '" + (dir / "make.py").string() + "' '" + dir.string() + "'").c_str()),
              0);
    for (const char* name : {"solid.jpg", "gray.jpg", "progressive.jpg", "cmyk.jpg"}) {
      inputs.push_back(ReadFile(dir / name));
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    SCOPED_TRACE(i);
    // The whole image at its own size: exact (MatchesPilAtFullSize).
    const std::string& input = inputs[i];
    // A PNG's IHDR holds its width and height, big-endian, at bytes 16-23.
    auto big_endian = [&input](size_t offset) {
      int value = 0;
      for (size_t i = offset; i < offset + 4; ++i) {
        value = value << 8 | static_cast<uint8_t>(input[i]);
      }
      return value;
    };
    const std::pair<int, int> size =
        input[0] == '\xFF' ? JpegSize(input) : std::pair<int, int>(big_endian(16), big_endian(20));
    const auto [full_width, full_height] = size;
    const auto full = Decode(input, full_height, full_width);
    ASSERT_TRUE(full.ok()) << full.status();
    const Rgb image = {full_width, full_height, *full};
    for (uint64_t seed = 0; seed < 8; ++seed) {
      // Outputs no smaller than the boxes: no DCT scaling.
      const ImageOptions options = CropOptions(48, 64);
      const CropBox box = SampleRandomResizedCrop(full_width, full_height, options, seed);
      if (input[0] == '\xFF') {
        ASSERT_EQ(ChooseEighths(box, full_width, full_height, 64, 48), 8);
      }
      const auto decoded = Decode(input, options, seed);
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      const std::vector<uint8_t> expected = ResizeBox(image, box, full_width, full_height, 64, 48);
      EXPECT_LE(Compare(*decoded, expected).max, 1) << "seed " << seed;
    }
  }
}

TEST(DecodeImageTest, RandomResizedCropOfGrayscaleIsGray) {
  std::vector<fs::path> paths = {fs::path(kSharedDataDir) / "imagenet-sample" / "n02692877" /
                                 "n02692877_airship.JPEG"};
  for (const fs::path& path : LargeSyntheticJpegs()) {
    if (path.filename().string().rfind("gray", 0) == 0) paths.push_back(path);
  }
  for (const fs::path& path : paths) {
    if (!fs::exists(path)) continue;
    SCOPED_TRACE(path.filename().string());
    const std::string jpeg = ReadFile(path);
    for (uint64_t seed = 0; seed < 10; ++seed) {
      const auto decoded = Decode(jpeg, CropOptions(), seed);
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      for (size_t i = 0; i < decoded->size(); i += 3) {
        ASSERT_EQ((*decoded)[i], (*decoded)[i + 1]) << i;
        ASSERT_EQ((*decoded)[i], (*decoded)[i + 2]) << i;
      }
    }
  }
}

// On an image whose red channel is the column and green the row, the output
// samples exactly the box: a linear ramp is kept by the (normalized,
// symmetric) filter away from the image's edges.
TEST(DecodeImageTest, RandomResizedCropSamplesTheBox) {
  constexpr int kWidth = 256;
  constexpr int kHeight = 200;
  std::vector<std::string> rows;
  for (int y = 0; y < kHeight; ++y) {
    std::string row;
    for (int x = 0; x < kWidth; ++x) {
      row += static_cast<char>(x);
      row += static_cast<char>(y);
      row += '\0';
    }
    rows.push_back(row);
  }
  const std::string png = MakePng(kWidth, kHeight, 8, kRgb, rows);
  constexpr int kOut = 32;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    for (const bool flip : {false, true}) {
      ImageOptions options = CropOptions(kOut, kOut);
      options.random_flip = flip;
      const CropBox box = SampleRandomResizedCrop(kWidth, kHeight, options, seed);
      const bool flipped = flip && SampleHorizontalFlip(seed);
      const auto decoded = Decode(png, options, seed);
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      for (int oy = 2; oy < kOut - 2; ++oy) {
        for (int ox = 2; ox < kOut - 2; ++ox) {
          // Where the output pixel's center falls in the image.
          const int sx = flipped ? kOut - 1 - ox : ox;
          const double x = box.x + (sx + 0.5) * box.width / kOut - 0.5;
          const double y = box.y + (oy + 0.5) * box.height / kOut - 0.5;
          const uint8_t* pixel = decoded->data() + 3 * (oy * kOut + ox);
          ASSERT_NEAR(pixel[0], x, 1.0) << "seed " << seed << " " << ox;
          ASSERT_NEAR(pixel[1], y, 1.0) << "seed " << seed << " " << oy;
        }
      }
    }
  }
}

TEST(DecodeImageTest, FlipMirrorsTheOutputExactly) {
  SKIP_WITHOUT_IMAGES();
  int flipped = 0;
  int kept = 0;
  for (const char* name : {"dog-3277414_640.jpg", "logo.png"}) {
    SCOPED_TRACE(name);
    const std::string bytes = ReadFile(ImagesDir() / name);
    for (const ResizeMode mode :
         {ResizeMode::kCenterCrop, ResizeMode::kStretch, ResizeMode::kRandomResizedCrop}) {
      for (uint64_t seed = 0; seed < 12; ++seed) {
        ImageOptions options = Options(40, 56, mode);
        const auto plain = Decode(bytes, options, seed);
        ASSERT_TRUE(plain.ok()) << plain.status();
        options.random_flip = true;
        const auto hwc = Decode(bytes, options, seed);
        ASSERT_TRUE(hwc.ok()) << hwc.status();
        options.layout = Layout::kCHW;
        const auto chw = Decode(bytes, options, seed);
        ASSERT_TRUE(chw.ok()) << chw.status();
        const std::vector<uint8_t> expected =
            SampleHorizontalFlip(seed) ? MirrorHwc(*plain, 56) : *plain;
        EXPECT_EQ(*hwc, expected) << "seed " << seed;
        EXPECT_EQ(*chw, HwcToChw(expected)) << "seed " << seed;
        (SampleHorizontalFlip(seed) ? flipped : kept) += 1;
      }
    }
  }
  EXPECT_GT(flipped, 0);
  EXPECT_GT(kept, 0);
}

TEST(DecodeImageTest, SeedOnlyChangesRandomChoices) {
  SKIP_WITHOUT_IMAGES();
  const std::string jpeg = ReadFile(ImagesDir() / "420.jpg");
  for (const ResizeMode mode : {ResizeMode::kCenterCrop, ResizeMode::kStretch}) {
    EXPECT_EQ(*Decode(jpeg, 64, 64, mode, Layout::kHWC, 1),
              *Decode(jpeg, 64, 64, mode, Layout::kHWC, 2));
  }
  int different = 0;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    different +=
        *Decode(jpeg, CropOptions(64, 64), seed) != *Decode(jpeg, CropOptions(64, 64), seed + 1);
  }
  EXPECT_EQ(different, 10);
}

TEST(DecodeImageTest, RandomResizedCropIsReproducibleAcrossThreads) {
  SKIP_WITHOUT_IMAGES();
  const std::vector<fs::path> jpegs = Jpegs();
  std::vector<std::string> inputs;
  for (size_t i = 0; i < jpegs.size() && inputs.size() < 6; i += 4) {
    inputs.push_back(ReadFile(jpegs[i]));
  }
  inputs.push_back(ReadFile(ImagesDir() / "logo.png"));
  inputs.push_back(ReadFile(ImagesDir() / "truncated.jpg"));
  ImageOptions options = CropOptions(56, 48);
  options.random_flip = true;
  struct Job {
    size_t input;
    uint64_t seed;
  };
  std::vector<Job> jobs;
  std::vector<absl::StatusOr<std::vector<uint8_t>>> expected;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (uint64_t seed = 100; seed < 104; ++seed) {
      jobs.push_back({i, seed});
      expected.push_back(Decode(inputs[i], options, seed));
    }
  }
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        for (size_t j = 0; j < jobs.size(); ++j) {
          const size_t k = (j * (t + 1) + round) % jobs.size();
          const auto decoded = Decode(inputs[jobs[k].input], options, jobs[k].seed);
          if (decoded.ok() != expected[k].ok() || (decoded.ok() && *decoded != *expected[k])) {
            ++mismatches[t];
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << t;
}

// Only the crop's rows are decoded, but the rest of the file is still read:
// a truncated JPEG fails even for crops that lie in its intact part, so
// whether a sample decodes never depends on the seed.
TEST(DecodeImageTest, TruncatedJpegFailsWhateverTheCrop) {
  SKIP_WITHOUT_IMAGES();
  const std::string jpeg = ReadFile(ImagesDir() / "444.jpg");  // 680x453
  int crops_in_top_part = 0;
  for (const double fraction : {0.5, 0.9, 0.99}) {
    const std::string cut = jpeg.substr(0, jpeg.size() * fraction);
    for (const int size : {64, 224}) {
      for (uint64_t seed = 0; seed < 300; ++seed) {
        const ImageOptions options = CropOptions(size, size);
        const CropBox box = SampleRandomResizedCrop(680, 453, options, seed);
        // Crops that end well above the cut (the rows above it are intact)
        // and a few others.
        const bool in_top_part = box.y + box.height < 453 * (fraction - 0.1);
        if (!in_top_part && seed >= 20) continue;
        crops_in_top_part += in_top_part;
        const auto decoded = Decode(cut, options, seed);
        EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss)
            << fraction << " seed " << seed;
        EXPECT_THAT(std::string(decoded.status().message()), StartsWith("JPEG decode failed: "));
      }
    }
  }
  EXPECT_GT(crops_in_top_part, 100);
}

// Resizes with PIL, one job per line of the file given:
// "<path> <crop: 0 or 1> <x0> <y0> <x1> <y1> <width> <height> <output>".
// With crop, the image is cropped to the (integer) box, then resized whole
// (torchvision's RandomResizedCrop on PIL images); otherwise the box is
// Image.resize's (float) box.
constexpr char kPilResize[] = R"py(
import sys
from PIL import Image
for line in open(sys.argv[1]):
    path, crop, x0, y0, x1, y1, width, height, out = line.split()
    image = Image.open(path).convert("RGB")
    box = tuple(float(v) for v in (x0, y0, x1, y1))
    size = (int(width), int(height))
    if crop == "1":
        image = image.crop(tuple(int(v) for v in box))
        image = image.resize(size, Image.BILINEAR)
    else:
        image = image.resize(size, Image.BILINEAR, box=box)
    open(out, "wb").write(image.tobytes())
)py";

// At scale 8/8 the resampling is PIL's: kRandomResizedCrop is
// torchvision's RandomResizedCrop(size) on the PIL image for the same box,
// kStretch is Image.resize and kCenterCrop Image.resize of the region. It is
// the algorithm of Pillow up to 12 to the bit; Pillow 13 runs the vertical
// pass first when the height shrinks much more than the width (Pillow pull
// request 9549), and Pillow rounds a box to float32, which changes the
// rounding of a few pixels by 1.
TEST(DecodeImageTest, MatchesPilResizeAtFullScale) {
  SKIP_WITHOUT_IMAGES();
  if (!HavePil()) GTEST_SKIP() << "python3 with PIL is not available";
  struct Job {
    std::string path;
    ImageOptions options;
    uint64_t seed;
    bool crop;
    double x0, y0, x1, y1;
  };
  std::vector<Job> jobs;
  for (const char* name : {"444.jpg", "dog-3277414_640.jpg", "422-odd-width.jpg", "logo.png"}) {
    const fs::path path = ImagesDir() / name;
    const auto pil = PilDecode({path});
    ASSERT_EQ(pil.size(), 1u);
    const int width = pil[0].width;
    const int height = pil[0].height;
    // Random crops that need no DCT scaling.
    int num_crops = 0;
    for (uint64_t seed = 0; seed < 500 && num_crops < 5; ++seed) {
      const ImageOptions options = CropOptions(224, 224);
      const CropBox box = SampleRandomResizedCrop(width, height, options, seed);
      if (ChooseEighths(box, width, height, 224, 224) != 8) continue;
      ++num_crops;
      jobs.push_back({path.string(), options, seed, true, static_cast<double>(box.x),
                      static_cast<double>(box.y), static_cast<double>(box.x + box.width),
                      static_cast<double>(box.y + box.height)});
    }
    ASSERT_EQ(num_crops, 5) << name;
    // Slightly smaller or larger than the image: no DCT scaling either.
    for (const auto& [out_width, out_height] : std::vector<std::pair<int, int>>{
             {width * 15 / 16, height * 15 / 16}, {width + 37, height + 11}}) {
      jobs.push_back({path.string(), Options(out_height, out_width, ResizeMode::kStretch), 0, false,
                      0, 0, static_cast<double>(width), static_cast<double>(height)});
    }
    for (const auto& [out_width, out_height] : std::vector<std::pair<int, int>>{
             {height * 15 / 16, height * 15 / 16}, {width - 3, height / 2}}) {
      const double scale = std::max(static_cast<double>(out_width) / width,
                                    static_cast<double>(out_height) / height);
      const double region_width = out_width / scale;
      const double region_height = out_height / scale;
      jobs.push_back({path.string(), Options(out_height, out_width, ResizeMode::kCenterCrop), 0,
                      false, (width - region_width) / 2, (height - region_height) / 2,
                      (width + region_width) / 2, (height + region_height) / 2});
    }
  }
  const fs::path dir = TempPath("pil_resize");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "resize.py") << kPilResize;
  {
    std::ofstream list(dir / "jobs.txt");
    list.precision(17);
    for (size_t i = 0; i < jobs.size(); ++i) {
      const Job& job = jobs[i];
      list << job.path << " " << job.crop << " " << job.x0 << " " << job.y0 << " " << job.x1 << " "
           << job.y1 << " " << job.options.width << " " << job.options.height << " "
           << (dir / std::to_string(i)).string() << "\n";
    }
  }
  ASSERT_EQ(std::system(("python3 '" + (dir / "resize.py").string() + "' '" +
                         (dir / "jobs.txt").string() + "'")
                            .c_str()),
            0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& job = jobs[i];
    SCOPED_TRACE(job.path + " job " + std::to_string(i));
    const auto decoded = Decode(ReadFile(job.path), job.options, job.seed);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    const std::string expected = ReadFile(dir / std::to_string(i));
    const Difference difference =
        Compare(*decoded, std::vector<uint8_t>(expected.begin(), expected.end()));
    EXPECT_LE(difference.max, 1);
    EXPECT_LE(difference.mean, 0.2);
  }
}

}  // namespace
}  // namespace shardloader
