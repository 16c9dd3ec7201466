#include "shardloader/format/tar_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "shardloader/status.h"

// The rules for what is malformed follow Go's archive/tar (reader.go,
// format.go, strconv.go and common.go in golang/go/src/archive/tar), whose
// test vectors are in ../shared/data/edge/tar/go.

namespace shardloader {
namespace {

constexpr int64_t kBlockSize = 512;
// The largest PAX header or GNU long name/link accepted, as in Go and
// libarchive: a garbage size must not make us allocate gigabytes.
constexpr int64_t kMaxExtensionBytes = int64_t{1} << 20;
// ReadData() grows its output as the data arrives, from this size (or the
// output's capacity) on, so that a corrupt size cannot allocate much more
// than the archive holds.
constexpr size_t kReadStepBytes = size_t{1} << 20;
// Bytes read at a time when checking what follows the end of the archive.
constexpr size_t kTrailingStepBytes = size_t{64} << 10;
// Largest single ByteSource::Skip() call, far from int64 overflow.
constexpr int64_t kMaxSkipBytes = int64_t{1} << 40;

// A field of a header block.
struct Field {
  size_t offset;
  size_t size;
};
constexpr Field kName{0, 100};
constexpr Field kMode{100, 8};
constexpr Field kUid{108, 8};
constexpr Field kGid{116, 8};
constexpr Field kSize{124, 12};
constexpr Field kMtime{136, 12};
constexpr Field kChecksum{148, 8};
constexpr size_t kTypeflagOffset = 156;
constexpr Field kLinkName{157, 100};
constexpr Field kMagic{257, 6};
constexpr Field kVersion{263, 2};
constexpr Field kDevMajor{329, 8};
constexpr Field kDevMinor{337, 8};
constexpr Field kUstarPrefix{345, 155};
constexpr Field kStarPrefix{345, 131};
constexpr Field kStarAtime{476, 12};
constexpr Field kStarCtime{488, 12};
constexpr Field kStarTrailer{508, 4};
constexpr Field kGnuAtime{345, 12};
constexpr Field kGnuCtime{357, 12};
constexpr Field kGnuRealSize{483, 12};
// Old GNU sparse maps: entries of a 12-byte offset and a 12-byte length, 4 in
// the header followed by an "is extended" byte, 21 in each extension block.
constexpr size_t kSparseEntryBytes = 24;
constexpr Field kGnuSparse{386, 4 * kSparseEntryBytes};
constexpr size_t kGnuIsExtendedOffset = 482;
constexpr Field kSparseExtension{0, 21 * kSparseEntryBytes};
constexpr size_t kSparseExtensionIsExtendedOffset = 504;

enum class Format { kV7, kUstar, kStar, kGnu };

// A header block's own fields, before extension headers are applied.
struct Header {
  char typeflag = '\0';
  std::string name;
  std::string link_name;
  int64_t size = 0;
};

absl::string_view Get(const char* block, Field field) {
  return absl::string_view(block + field.offset, field.size);
}

// The bytes of `s` up to its first NUL.
absl::string_view CString(absl::string_view s) { return s.substr(0, s.find('\0')); }

bool IsAscii(absl::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

bool IsZeroBlock(const char* block) {
  return std::all_of(block, block + kBlockSize, [](char c) { return c == 0; });
}

int64_t Padding(int64_t size) { return -size & (kBlockSize - 1); }

// Octal, padded with spaces and NULs on either side.
std::optional<int64_t> ParseOctal(absl::string_view field) {
  auto is_pad = [](char c) { return c == ' ' || c == '\0'; };
  while (!field.empty() && is_pad(field.front())) field.remove_prefix(1);
  while (!field.empty() && is_pad(field.back())) field.remove_suffix(1);
  uint64_t value = 0;
  for (const char c : CString(field)) {
    if (c < '0' || c > '7' || value > (~uint64_t{0} >> 3)) return std::nullopt;
    value = value << 3 | static_cast<uint64_t>(c - '0');
  }
  return static_cast<int64_t>(value);
}

// Base-256 (GNU: the top bit of the first byte is set, the next bit is the
// sign of a big-endian two's complement number) or else octal.
std::optional<int64_t> ParseNumeric(absl::string_view field) {
  if (field.empty() || (field[0] & 0x80) == 0) return ParseOctal(field);
  const uint8_t invert = (field[0] & 0x40) != 0 ? 0xff : 0x00;
  uint64_t value = 0;
  for (size_t i = 0; i < field.size(); ++i) {
    uint8_t c = static_cast<uint8_t>(field[i]) ^ invert;
    if (i == 0) c &= 0x7f;
    if ((value >> 56) != 0) return std::nullopt;
    value = value << 8 | c;
  }
  if ((value >> 63) != 0) return std::nullopt;
  return invert != 0 ? ~static_cast<int64_t>(value) : static_cast<int64_t>(value);
}

// A decimal int64 with an optional sign, as Go's strconv.ParseInt(s, 10, 64).
std::optional<int64_t> ParseDecimal(absl::string_view s) {
  const bool negative = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  uint64_t value = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (limit - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return static_cast<int64_t>(negative ? 0 - value : value);
}

// "<seconds>[.<digits>]", as Go's parsePAXTime.
bool IsValidPaxTime(absl::string_view s) {
  const size_t dot = s.find('.');
  if (!ParseDecimal(s.substr(0, dot)).has_value()) return false;
  return dot == absl::string_view::npos ||
         s.find_first_not_of("0123456789", dot + 1) == absl::string_view::npos;
}

// Go's validPAXRecord: keys never hold NUL (nor '='), and the values of the
// ustar string fields hold no NUL either.
bool IsValidPaxRecord(absl::string_view key, absl::string_view value) {
  if (key.empty()) return false;
  if (key == "path" || key == "linkpath" || key == "uname" || key == "gname") {
    return value.find('\0') == absl::string_view::npos;
  }
  return key.find('\0') == absl::string_view::npos;
}

// Splits the first record "<length> <key>=<value>\n" off `data`, where
// <length> counts the whole record. Returns false if it is malformed.
bool NextPaxRecord(absl::string_view* data, absl::string_view* key, absl::string_view* value) {
  const size_t space = data->find(' ');
  if (space == absl::string_view::npos) return false;
  const std::optional<int64_t> length = ParseDecimal(data->substr(0, space));
  if (!length.has_value() || *length < 5 || *length > static_cast<int64_t>(data->size()) ||
      *length <= static_cast<int64_t>(space + 1)) {
    return false;
  }
  absl::string_view record = data->substr(0, static_cast<size_t>(*length));
  if (record.back() != '\n') return false;
  record = record.substr(space + 1, record.size() - space - 2);
  const size_t equals = record.find('=');
  if (equals == absl::string_view::npos) return false;
  *key = record.substr(0, equals);
  *value = record.substr(equals + 1);
  data->remove_prefix(static_cast<size_t>(*length));
  return IsValidPaxRecord(*key, *value);
}

// The regions of a sparse file's map must be in order, must not overlap and
// must lie within the file (Go's validateSparseEntries, as BSD tar).
class SparseMapChecker {
 public:
  explicit SparseMapChecker(int64_t size) : size_(size) {}

  bool Add(int64_t offset, int64_t length) {
    if (size_ < 0 || offset < 0 || length < 0 ||
        offset > std::numeric_limits<int64_t>::max() - length || offset + length > size_ ||
        offset < end_) {
      return false;
    }
    end_ = offset + length;
    return true;
  }

 private:
  int64_t size_;
  int64_t end_ = 0;
};

// Sum of the block's bytes, read as `Byte`, with the checksum field counted
// as spaces. A plain loop over the block, which the compiler vectorises.
template <typename Byte>
int64_t HeaderSum(const char* block) {
  int32_t sum = 0;  // at most 512 * 255
  for (size_t i = 0; i < static_cast<size_t>(kBlockSize); ++i) {
    sum += static_cast<Byte>(block[i]);
  }
  for (size_t i = kChecksum.offset; i < kChecksum.offset + kChecksum.size; ++i) {
    sum -= static_cast<Byte>(block[i]);
  }
  return sum + static_cast<int32_t>(kChecksum.size) * ' ';
}

bool ChecksumMatches(const char* block) {
  const std::optional<int64_t> stored = ParseOctal(Get(block, kChecksum));
  if (!stored.has_value()) return false;
  // POSIX sums unsigned bytes; historic Sun tar summed signed ones.
  return *stored == HeaderSum<unsigned char>(block) || *stored == HeaderSum<signed char>(block);
}

Format GetFormat(const char* block) {
  const absl::string_view magic = Get(block, kMagic);
  if (magic == absl::string_view("ustar\0", 6)) {
    return Get(block, kStarTrailer) == absl::string_view("tar\0", 4) ? Format::kStar
                                                                     : Format::kUstar;
  }
  if (magic == "ustar " && Get(block, kVersion) == absl::string_view(" \0", 2)) {
    return Format::kGnu;
  }
  return Format::kV7;
}

// Parses a header block whose checksum is valid. Every numeric field must
// parse, even those we do not report (as Go).
absl::StatusOr<Header> ParseHeader(const char* block, Format format) {
  bool numbers_ok = true;
  auto check = [&numbers_ok, block](Field field) {
    const std::optional<int64_t> value = ParseNumeric(Get(block, field));
    numbers_ok = numbers_ok && value.has_value();
    return value.value_or(0);
  };
  Header header;
  header.typeflag = block[kTypeflagOffset];
  header.name = std::string(CString(Get(block, kName)));
  header.link_name = std::string(CString(Get(block, kLinkName)));
  header.size = check(kSize);
  check(kMode);
  check(kUid);
  check(kGid);
  check(kMtime);
  if (format != Format::kV7) {
    check(kDevMajor);
    check(kDevMinor);
    absl::string_view prefix;
    switch (format) {
      case Format::kUstar:
        prefix = CString(Get(block, kUstarPrefix));
        break;
      case Format::kStar:
        prefix = CString(Get(block, kStarPrefix));
        check(kStarAtime);
        check(kStarCtime);
        break;
      case Format::kGnu: {
        // GNU keeps atime and ctime where ustar has its prefix. Go 1.7 and
        // earlier wrote a ustar prefix into GNU headers (golang.org/issue/
        // 12594): if the times do not parse, read an ASCII prefix there.
        auto time_ok = [block](Field field) {
          return block[field.offset] == 0 || ParseNumeric(Get(block, field)).has_value();
        };
        if (!time_ok(kGnuAtime) || !time_ok(kGnuCtime)) {
          const absl::string_view legacy = CString(Get(block, kUstarPrefix));
          if (IsAscii(legacy)) prefix = legacy;
        }
        break;
      }
      case Format::kV7:
        break;
    }
    if (!prefix.empty()) header.name = absl::StrCat(prefix, "/", header.name);
  }
  if (!numbers_ok) {
    return absl::DataLossError("invalid numeric field in tar header");
  }
  return header;
}

// Types whose size field does not describe stored data (Go's
// isHeaderOnlyType).
bool IsHeaderOnly(char typeflag) { return typeflag >= '1' && typeflag <= '6'; }

TarEntryType EntryType(char typeflag, absl::string_view name) {
  switch (typeflag) {
    case '\0':
      // Legacy archives mark directories with a trailing slash.
      return !name.empty() && name.back() == '/' ? TarEntryType::kDirectory
                                                 : TarEntryType::kRegular;
    case '0':
    case '7':
      return TarEntryType::kRegular;
    case '1':
      return TarEntryType::kHardLink;
    case '2':
      return TarEntryType::kSymlink;
    case '5':
      return TarEntryType::kDirectory;
    default:
      return TarEntryType::kOther;
  }
}

// A member name for error messages: escaped and bounded.
std::string Quote(absl::string_view name) {
  constexpr size_t kMaxBytes = 200;
  return absl::StrCat("'", absl::CHexEscape(name.substr(0, kMaxBytes)),
                      name.size() > kMaxBytes ? "...'" : "'");
}

// Names the shard and the offset of the header at fault.
absl::Status WithShardContext(const absl::Status& status, const ByteSource& source,
                              int64_t offset) {
  ErrorContext context;
  context.uri = source.uri();
  context.offset = offset;
  return WithContext(status, context);
}

absl::Status TruncatedHeader() {
  return absl::DataLossError("unexpected end of archive: truncated tar header");
}

}  // namespace

bool IsHeaderOfSize(const char* block, int64_t size) {
  if (!ChecksumMatches(block)) return false;
  const std::optional<int64_t> stored = ParseNumeric(Get(block, kSize));
  return stored.has_value() && *stored == size;
}

absl::StatusOr<std::optional<TarMember>> TarReader::Next() {
  if (!status_.ok()) return status_;
  absl::StatusOr<std::optional<TarMember>> member = ReadNextMember();
  if (member.ok()) return member;
  status_ = WithShardContext(member.status(), *source_, error_offset_);
  return status_;
}

absl::Status TarReader::ReadData(std::string* out) {
  if (!status_.ok()) return status_;
  if (data_read_) {
    return absl::FailedPreconditionError(
        "TarReader::ReadData: no current member, or its data was already "
        "read");
  }
  data_read_ = true;
  const size_t size = static_cast<size_t>(remaining_);
  size_t done = 0;
  // One resize if the member fits in kReadStepBytes or in the capacity `out`
  // already has; geometric growth beyond.
  while (done < size) {
    const size_t target = std::min(size, std::max({kReadStepBytes, out->capacity(), 2 * done}));
    out->resize(target);
    absl::StatusOr<size_t> n = ReadUpTo(out->data() + done, target - done);
    absl::Status status = n.status();
    if (status.ok()) {
      done += *n;
      if (done < target) {
        status = absl::DataLossError(absl::StrCat("unexpected end of archive in the data of ",
                                                  Quote(member_name_), " (", done, " of ", size,
                                                  " bytes)"));
      }
    }
    if (!status.ok()) {
      status_ = WithShardContext(status, *source_, member_offset_);
      return status_;
    }
  }
  out->resize(size);
  remaining_ = 0;
  return absl::OkStatus();
}

absl::StatusOr<std::optional<TarMember>> TarReader::ReadNextMember() {
  if (at_end_) return std::nullopt;
  SHARDLOADER_RETURN_IF_ERROR(SkipCurrent());
  pax_records_.clear();
  long_name_.clear();
  long_link_.clear();
  int64_t first_offset = -1;  // of the member's first extension header
  char block[kBlockSize];
  while (true) {
    const int64_t offset = source_->position();
    error_offset_ = offset;
    SHARDLOADER_ASSIGN_OR_RETURN(const bool got_block, ReadBlock(block));
    if (!got_block) {
      at_end_ = true;
      return std::nullopt;
    }
    if (IsZeroBlock(block)) {
      // The end: two zero blocks, or one at the end of the stream.
      error_offset_ = source_->position();
      SHARDLOADER_ASSIGN_OR_RETURN(const bool got_second, ReadBlock(block));
      if (got_second && !IsZeroBlock(block)) {
        return absl::DataLossError("a zero block (end of archive) followed by a non-zero block");
      }
      if (got_second) SHARDLOADER_RETURN_IF_ERROR(CheckOnlyZerosFollow(offset));
      at_end_ = true;
      return std::nullopt;
    }
    if (!ChecksumMatches(block)) {
      return absl::DataLossError("invalid tar header checksum");
    }
    const Format format = GetFormat(block);
    SHARDLOADER_ASSIGN_OR_RETURN(Header header, ParseHeader(block, format));
    const bool header_only = IsHeaderOnly(header.typeflag);
    if (!header_only && header.size < 0) {
      return absl::DataLossError(absl::StrCat("negative size in tar header: ", header.size));
    }
    if (first_offset < 0) first_offset = offset;

    switch (header.typeflag) {
      case 'x':  // PAX extended header for the next member
      case 'X':  // the same, as written by Solaris tar
      case 'g':  // PAX global header
        SHARDLOADER_RETURN_IF_ERROR(ReadExtension(header.size, &pax_data_));
        SHARDLOADER_RETURN_IF_ERROR(ParsePaxData());
        if (header.typeflag == 'g') {
          // Local extensions before a global header are dropped (as Go,
          // Python's tarfile).
          ApplyGlobalRecords();
          pax_records_.clear();
          long_name_.clear();
          long_link_.clear();
          first_offset = -1;
        }
        continue;
      case 'L':    // GNU long name for the next member
      case 'K': {  // GNU long link name for the next member
        std::string* value = header.typeflag == 'L' ? &long_name_ : &long_link_;
        SHARDLOADER_RETURN_IF_ERROR(ReadExtension(header.size, value));
        value->resize(CString(*value).size());
        continue;
      }
      default:
        break;
    }

    // A member: extension headers override its own fields, local PAX records
    // before global ones; an empty local value restores the header's field.
    auto override_with = [this](absl::string_view key, const std::optional<std::string>& global,
                                std::string* field) {
      if (const std::optional<absl::string_view> local = LocalRecord(key)) {
        if (!local->empty()) field->assign(local->data(), local->size());
      } else if (global.has_value()) {
        *field = *global;
      }
    };
    TarMember member;
    member.name = std::move(header.name);
    member.link_name = std::move(header.link_name);
    override_with("path", global_path_, &member.name);
    override_with("linkpath", global_link_path_, &member.link_name);
    int64_t size = header.size;
    if (const std::optional<absl::string_view> local = LocalRecord("size")) {
      if (!local->empty()) size = *ParseDecimal(*local);  // valid: ParsePax
    } else if (global_size_.has_value()) {
      size = *global_size_;
    }
    if (!long_name_.empty()) member.name = long_name_;
    if (!long_link_.empty()) member.link_name = long_link_;
    if (header_only) size = 0;

    bool sparse = false;
    if (header.typeflag == 'S') {
      if (format != Format::kGnu) {
        return absl::DataLossError("GNU sparse header in a non-GNU archive");
      }
      SHARDLOADER_RETURN_IF_ERROR(ReadOldGnuSparseMap(block));
      sparse = true;
    } else {
      SHARDLOADER_ASSIGN_OR_RETURN(sparse, CheckPaxSparse(size, &member.name));
      if (sparse && header_only) {
        return absl::DataLossError("GNU sparse records for a member without data");
      }
    }

    member.type = sparse ? TarEntryType::kOther : EntryType(header.typeflag, member.name);
    if (member.type != TarEntryType::kHardLink && member.type != TarEntryType::kSymlink) {
      member.link_name.clear();
    }
    member.header_offset = first_offset;
    member.data_offset = source_->position();
    if (size > std::numeric_limits<int64_t>::max() - kBlockSize - member.data_offset) {
      return absl::DataLossError(absl::StrCat("size in tar header too large: ", size));
    }
    member.size = size;
    member_name_ = member.name;
    member_offset_ = first_offset;
    remaining_ = size;
    padding_ = Padding(size);
    data_read_ = false;
    return member;
  }
}

absl::Status TarReader::SkipCurrent() {
  if (remaining_ > 0) {
    error_offset_ = member_offset_;
    SHARDLOADER_ASSIGN_OR_RETURN(const int64_t skipped, SkipUpTo(remaining_));
    if (skipped < remaining_) {
      return absl::DataLossError(absl::StrCat("unexpected end of archive in the data of ",
                                              Quote(member_name_), " (", skipped, " of ",
                                              remaining_, " bytes)"));
    }
  }
  // The stream may end within the padding: the next header read then finds
  // a clean end (as Go).
  SHARDLOADER_RETURN_IF_ERROR(SkipUpTo(padding_).status());
  remaining_ = 0;
  padding_ = 0;
  data_read_ = true;
  return absl::OkStatus();
}

absl::Status TarReader::ReadOldGnuSparseMap(char* block) {
  const std::optional<int64_t> real_size = ParseNumeric(Get(block, kGnuRealSize));
  if (!real_size.has_value()) {
    return absl::DataLossError("invalid numeric field in tar header");
  }
  SparseMapChecker checker(*real_size);
  absl::string_view entries = Get(block, kGnuSparse);
  bool extended = block[kGnuIsExtendedOffset] != 0;
  while (true) {
    for (size_t i = 0; i < entries.size(); i += kSparseEntryBytes) {
      const absl::string_view entry = entries.substr(i, kSparseEntryBytes);
      if (entry[0] == 0) break;  // the end of the entries, as GNU/BSD tar
      const std::optional<int64_t> offset = ParseNumeric(entry.substr(0, 12));
      const std::optional<int64_t> length = ParseNumeric(entry.substr(12));
      if (!offset.has_value() || !length.has_value() || !checker.Add(*offset, *length)) {
        return absl::DataLossError("invalid GNU sparse map");
      }
    }
    if (!extended) return absl::OkStatus();
    SHARDLOADER_ASSIGN_OR_RETURN(const bool got_block, ReadBlock(block));
    if (!got_block) return TruncatedHeader();
    entries = Get(block, kSparseExtension);
    extended = block[kSparseExtensionIsExtendedOffset] != 0;
  }
}

absl::Status TarReader::CheckOnlyZerosFollow(int64_t end_offset) {
  std::string buffer(kTrailingStepBytes, '\0');
  while (true) {
    const int64_t position = source_->position();
    error_offset_ = position;
    SHARDLOADER_ASSIGN_OR_RETURN(const size_t n, ReadUpTo(buffer.data(), buffer.size()));
    const size_t nonzero = buffer.find_first_not_of('\0');
    if (nonzero < n) {
      error_offset_ = position + static_cast<int64_t>(nonzero);
      return absl::DataLossError(
          absl::StrCat("non-zero data after the end-of-archive marker (two zero blocks at "
                       "offset ",
                       end_offset,
                       "): the shard is damaged, e.g. zeroed or "
                       "overwritten in part"));
    }
    if (n < buffer.size()) return absl::OkStatus();
  }
}

absl::StatusOr<size_t> TarReader::ReadUpTo(char* dst, size_t size) {
  size_t done = 0;
  while (done < size) {
    SHARDLOADER_ASSIGN_OR_RETURN(const size_t n, source_->Read(dst + done, size - done));
    if (n == 0) break;
    done += n;
  }
  return done;
}

absl::StatusOr<int64_t> TarReader::SkipUpTo(int64_t size) {
  int64_t skipped = 0;
  while (skipped < size) {
    const int64_t step = std::min(size - skipped, kMaxSkipBytes);
    SHARDLOADER_ASSIGN_OR_RETURN(const int64_t n, source_->Skip(step));
    skipped += n;
    if (n < step) break;
  }
  return skipped;
}

absl::StatusOr<bool> TarReader::ReadBlock(char* block) {
  SHARDLOADER_ASSIGN_OR_RETURN(const size_t n, ReadUpTo(block, static_cast<size_t>(kBlockSize)));
  if (n == 0) return false;
  if (n < static_cast<size_t>(kBlockSize)) return TruncatedHeader();
  return true;
}

absl::Status TarReader::ReadExtension(int64_t size, std::string* out) {
  if (size > kMaxExtensionBytes) {
    return absl::DataLossError(absl::StrCat("tar extension header of ", size,
                                            " bytes is over the limit of ", kMaxExtensionBytes));
  }
  out->resize(static_cast<size_t>(size));
  SHARDLOADER_ASSIGN_OR_RETURN(const size_t n, ReadUpTo(out->data(), out->size()));
  if (n < out->size()) {
    return absl::DataLossError(absl::StrCat("unexpected end of archive in a tar extension header (",
                                            n, " of ", size, " bytes)"));
  }
  return SkipUpTo(Padding(size)).status();
}

absl::Status TarReader::ParsePaxData() {
  pax_records_.clear();
  absl::string_view data = pax_data_;
  int num_sparse_fields = 0;  // GNU sparse 0.0 offset/numbytes records
  while (!data.empty()) {
    absl::string_view key;
    absl::string_view value;
    if (!NextPaxRecord(&data, &key, &value)) {
      return absl::DataLossError("malformed PAX record");
    }
    if (key == "GNU.sparse.offset" || key == "GNU.sparse.numbytes") {
      // They alternate, offset first, and hold one number each.
      const bool want_offset = num_sparse_fields % 2 == 0;
      if ((key == "GNU.sparse.offset") != want_offset ||
          value.find(',') != absl::string_view::npos) {
        return absl::DataLossError("malformed GNU sparse 0.0 PAX records");
      }
      ++num_sparse_fields;
    } else if (!value.empty()) {
      bool valid = true;
      if (key == "size") {
        const std::optional<int64_t> size = ParseDecimal(value);
        valid = size.has_value() && *size >= 0;
      } else if (key == "uid" || key == "gid") {
        valid = ParseDecimal(value).has_value();
      } else if (key == "atime" || key == "mtime" || key == "ctime") {
        valid = IsValidPaxTime(value);
      }
      if (!valid) {
        return absl::DataLossError(
            absl::StrCat("invalid value of PAX record '", absl::CHexEscape(key), "'"));
      }
    }
    pax_records_.emplace_back(key, value);
  }
  return absl::OkStatus();
}

void TarReader::ApplyGlobalRecords() {
  for (const auto& [key, value] : pax_records_) {
    // An empty value deletes the global record (POSIX pax).
    if (key == "path") {
      global_path_ = value.empty() ? std::nullopt : std::optional<std::string>(value);
    } else if (key == "linkpath") {
      global_link_path_ = value.empty() ? std::nullopt : std::optional<std::string>(value);
    } else if (key == "size") {
      global_size_ = value.empty() ? std::nullopt : ParseDecimal(value);
    }
  }
}

std::optional<absl::string_view> TarReader::LocalRecord(absl::string_view key) const {
  for (auto it = pax_records_.rbegin(); it != pax_records_.rend(); ++it) {
    if (it->first == key) return it->second;
  }
  return std::nullopt;
}

absl::StatusOr<bool> TarReader::CheckPaxSparse(int64_t size, std::string* name) const {
  auto record = [this](absl::string_view key) {
    return LocalRecord(key).value_or(absl::string_view());
  };
  // Format 0.0 spreads its map over alternating offset/numbytes records.
  std::vector<absl::string_view> map_fields;
  for (const auto& [key, value] : pax_records_) {
    if (key == "GNU.sparse.offset" || key == "GNU.sparse.numbytes") {
      map_fields.push_back(value);
    }
  }
  const std::string map =
      map_fields.empty() ? std::string(record("GNU.sparse.map")) : absl::StrJoin(map_fields, ",");
  const absl::string_view major = record("GNU.sparse.major");
  const absl::string_view minor = record("GNU.sparse.minor");
  bool version_1_0 = false;
  if (major == "0" && (minor == "0" || minor == "1")) {
    version_1_0 = false;
  } else if (major == "1" && minor == "0") {
    version_1_0 = true;
  } else if (!major.empty() || !minor.empty() || map.empty()) {
    return false;  // an unknown version, or not sparse: a plain member
  }

  if (const absl::string_view sparse_name = record("GNU.sparse.name"); !sparse_name.empty()) {
    name->assign(sparse_name.data(), sparse_name.size());
  }
  absl::string_view real_size = record("GNU.sparse.size");
  if (real_size.empty()) real_size = record("GNU.sparse.realsize");
  if (!real_size.empty()) {
    const std::optional<int64_t> parsed = ParseDecimal(real_size);
    if (!parsed.has_value()) {
      return absl::DataLossError("invalid GNU sparse size PAX record");
    }
    size = *parsed;
  }
  // The map of format 1.0 opens the member's stored data, which we leave to
  // the reader of that data.
  if (version_1_0) return true;

  const std::optional<int64_t> num_blocks = ParseDecimal(record("GNU.sparse.numblocks"));
  const std::vector<absl::string_view> fields =
      map.empty() ? std::vector<absl::string_view>() : absl::StrSplit(map, ',');
  if (!num_blocks.has_value() || *num_blocks < 0 ||
      static_cast<uint64_t>(*num_blocks) != fields.size() / 2 || fields.size() % 2 != 0) {
    return absl::DataLossError("invalid GNU sparse map PAX records");
  }
  SparseMapChecker checker(size);
  for (size_t i = 0; i < fields.size(); i += 2) {
    const std::optional<int64_t> offset = ParseDecimal(fields[i]);
    const std::optional<int64_t> length = ParseDecimal(fields[i + 1]);
    if (!offset.has_value() || !length.has_value() || !checker.Add(*offset, *length)) {
      return absl::DataLossError("invalid GNU sparse map PAX records");
    }
  }
  return true;
}

}  // namespace shardloader
