#include "shardloader/format/tar_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

constexpr int64_t kBlockSize = 512;
constexpr size_t kNameBytes = 100;    // ustar name field
constexpr size_t kPrefixBytes = 155;  // ustar prefix field
constexpr size_t kMaxNameBytes = 65536;
// The largest value of an 11-digit octal field (size, mtime): 8 GiB - 1.
constexpr int64_t kMaxOctal11 = (int64_t{1} << 33) - 1;
// The largest single write(2); Linux writes at most about 2 GiB anyway.
constexpr size_t kMaxWriteBytes = size_t{1} << 30;
constexpr char kZeros[2 * kBlockSize] = {};

// Writes to a file descriptor it does not own.
class FdSink final : public ByteSink {
 public:
  FdSink(int fd, std::string uri) : fd_(fd), uri_(std::move(uri)) {}

  absl::Status Write(absl::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), std::min(data.size(), kMaxWriteBytes));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        // write(2) returning 0 for a non-empty buffer makes no progress.
        ErrorContext context;
        context.uri = uri_;
        context.offset = offset_;
        return WithContext(ErrnoToStatus(n < 0 ? errno : EIO, "write failed"), context);
      }
      offset_ += n;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
  }

 private:
  int fd_;
  std::string uri_;
  int64_t offset_ = 0;
};

bool IsAscii(absl::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Strict UTF-8: no overlong forms, surrogates or code points past U+10FFFF.
bool IsUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char lead = static_cast<unsigned char>(s[i]);
    size_t length;
    uint32_t code_point;
    uint32_t min_code_point;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if ((lead & 0xe0) == 0xc0) {
      length = 2, code_point = lead & 0x1f, min_code_point = 0x80;
    } else if ((lead & 0xf0) == 0xe0) {
      length = 3, code_point = lead & 0x0f, min_code_point = 0x800;
    } else if ((lead & 0xf8) == 0xf0) {
      length = 4, code_point = lead & 0x07, min_code_point = 0x10000;
    } else {
      return false;
    }
    if (s.size() - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      const unsigned char next = static_cast<unsigned char>(s[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code_point = code_point << 6 | (next & 0x3f);
    }
    if (code_point < min_code_point || code_point > 0x10ffff ||
        (code_point >= 0xd800 && code_point <= 0xdfff)) {
      return false;
    }
    i += length;
  }
  return true;
}

// Splits an ASCII `name` longer than the name field at a '/' into the ustar
// prefix and name fields, if it fits (as Go's splitUSTARPath).
bool SplitUstarPath(absl::string_view name, absl::string_view* prefix, absl::string_view* suffix) {
  size_t length = std::min(name.size(), kPrefixBytes + 1);
  if (length == name.size() && name.back() == '/') --length;
  const size_t slash = name.substr(0, length).rfind('/');
  if (slash == absl::string_view::npos || slash == 0 || slash > kPrefixBytes) {
    return false;
  }
  const size_t suffix_length = name.size() - slash - 1;
  if (suffix_length == 0 || suffix_length > kNameBytes) return false;
  *prefix = name.substr(0, slash);
  *suffix = name.substr(slash + 1);
  return true;
}

// What a reader that ignores PAX records sees instead of a long or
// non-ASCII name: its ASCII bytes, truncated, without a trailing slash (which
// would make some readers take the file for a directory).
std::string FallbackName(absl::string_view name) {
  std::string ascii;
  for (const char c : name) {
    if (static_cast<unsigned char>(c) < 0x80) ascii.push_back(c);
  }
  ascii.resize(std::min(ascii.size(), kNameBytes));
  while (!ascii.empty() && ascii.back() == '/') ascii.pop_back();
  return ascii;
}

// "<length> <key>=<value>\n", where <length> counts the whole record.
std::string PaxRecord(absl::string_view key, absl::string_view value) {
  const size_t payload = key.size() + value.size() + 3;  // ' ', '=', '\n'
  size_t length = payload + absl::StrCat(payload).size();
  if (absl::StrCat(length).size() + payload != length) ++length;
  return absl::StrCat(length, " ", key, "=", value, "\n");
}

// Writes `value` in octal, zero-padded to `width` - 1 digits and
// NUL-terminated. `value` must fit.
void PutOctal(char* field, size_t width, int64_t value) {
  field[width - 1] = '\0';
  for (size_t i = width - 1; i > 0; --i) {
    field[i - 1] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<TarWriter>> TarWriter::Create(int fd, std::string uri,
                                                             const TarWriterOptions& options) {
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("TarWriter: invalid file descriptor ", fd, " for ", uri));
  }
  return Create(std::make_unique<FdSink>(fd, std::move(uri)), options);
}

absl::StatusOr<std::unique_ptr<TarWriter>> TarWriter::Create(std::unique_ptr<ByteSink> sink,
                                                             const TarWriterOptions& options) {
  if (sink == nullptr) {
    return absl::InvalidArgumentError("TarWriter: null sink");
  }
  if (options.mtime_seconds < 0 || options.mtime_seconds > kMaxOctal11) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TarWriter: mtime_seconds ", options.mtime_seconds, " is outside [0, ", kMaxOctal11, "]"));
  }
  if (options.buffer_size_bytes == 0) {
    return absl::InvalidArgumentError("TarWriter: buffer_size_bytes is 0");
  }
  return std::unique_ptr<TarWriter>(new TarWriter(std::move(sink), options));
}

TarWriter::TarWriter(std::unique_ptr<ByteSink> sink, const TarWriterOptions& options)
    : sink_(std::move(sink)), options_(options) {
  buffer_.reserve(options_.buffer_size_bytes);
}

absl::Status TarWriter::AddFile(absl::string_view name, absl::string_view data) {
  if (name.empty() || name.find('\0') != absl::string_view::npos || name.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat("TarWriter: invalid file name of ", name.size(),
                                                   " bytes (must be 1 to ", kMaxNameBytes,
                                                   " bytes without NUL)"));
  }
  if (!status_.ok()) return status_;
  if (finished_) {
    return absl::FailedPreconditionError("TarWriter: AddFile after Finish");
  }
  absl::string_view name_field = name;
  absl::string_view prefix_field;
  const bool pax_path = !IsAscii(name) || (name.size() > kNameBytes &&
                                           !SplitUstarPath(name, &prefix_field, &name_field));
  const int64_t size = static_cast<int64_t>(data.size());
  const bool pax_size = size > kMaxOctal11;
  std::string fallback_name;
  if (pax_path || pax_size) {
    std::string records;
    if (pax_path) {
      if (!IsUtf8(name)) records = PaxRecord("hdrcharset", "BINARY");
      absl::StrAppend(&records, PaxRecord("path", name));
      fallback_name = FallbackName(name);
      name_field = fallback_name;
      prefix_field = absl::string_view();
    }
    if (pax_size) {
      absl::StrAppend(&records, PaxRecord("size", absl::StrCat(size)));
    }
    const int64_t records_size = static_cast<int64_t>(records.size());
    SHARDLOADER_RETURN_IF_ERROR(AppendHeader("././@PaxHeader", "", records_size, 'x'));
    SHARDLOADER_RETURN_IF_ERROR(Append(records));
    SHARDLOADER_RETURN_IF_ERROR(AppendPadding(records_size));
  }
  SHARDLOADER_RETURN_IF_ERROR(AppendHeader(name_field, prefix_field, size, '0'));
  SHARDLOADER_RETURN_IF_ERROR(Append(data));
  return AppendPadding(size);
}

absl::Status TarWriter::Finish() {
  if (!status_.ok()) return status_;
  if (finished_) {
    return absl::FailedPreconditionError("TarWriter: Finish called twice");
  }
  finished_ = true;
  SHARDLOADER_RETURN_IF_ERROR(Append(absl::string_view(kZeros, sizeof(kZeros))));
  return Flush();
}

absl::Status TarWriter::AppendHeader(absl::string_view name_field, absl::string_view prefix_field,
                                     int64_t size, char typeflag) {
  char block[kBlockSize] = {};
  std::copy(name_field.begin(), name_field.end(), block);
  PutOctal(block + 100, 8, 0644);                             // mode
  PutOctal(block + 108, 8, 0);                                // uid
  PutOctal(block + 116, 8, 0);                                // gid
  PutOctal(block + 124, 12, size <= kMaxOctal11 ? size : 0);  // size
  PutOctal(block + 136, 12, options_.mtime_seconds);          // mtime
  block[156] = typeflag;
  std::memcpy(block + 257, "ustar", 6);  // magic
  std::memcpy(block + 263, "00", 2);     // version
  PutOctal(block + 329, 8, 0);           // devmajor
  PutOctal(block + 337, 8, 0);           // devminor
  std::copy(prefix_field.begin(), prefix_field.end(), block + 345);
  // The checksum sums the block with its own field as spaces and is written
  // as six octal digits, a NUL and a space.
  std::memset(block + 148, ' ', 8);
  int64_t checksum = 0;
  for (const char c : block) checksum += static_cast<unsigned char>(c);
  PutOctal(block + 148, 7, checksum);
  return Append(absl::string_view(block, sizeof(block)));
}

absl::Status TarWriter::AppendPadding(int64_t size) {
  return Append(absl::string_view(kZeros, -size & (kBlockSize - 1)));
}

absl::Status TarWriter::Append(absl::string_view data) {
  bytes_written_ += static_cast<int64_t>(data.size());
  const size_t capacity = options_.buffer_size_bytes;
  while (!data.empty()) {
    if (buffer_.empty() && data.size() >= capacity) {
      status_ = sink_->Write(data);
      return status_;
    }
    const size_t n = std::min(data.size(), capacity - buffer_.size());
    buffer_.append(data.data(), n);
    data.remove_prefix(n);
    if (buffer_.size() == capacity) SHARDLOADER_RETURN_IF_ERROR(Flush());
  }
  return absl::OkStatus();
}

absl::Status TarWriter::Flush() {
  if (!buffer_.empty()) {
    status_ = sink_->Write(buffer_);
    buffer_.clear();
  }
  return status_;
}

}  // namespace shardloader
