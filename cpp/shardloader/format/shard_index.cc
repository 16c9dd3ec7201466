#include "shardloader/format/shard_index.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "shardloader/format/sample_reader.h"
#include "shardloader/format/tar_reader.h"
#include "shardloader/io/output/output_file.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

constexpr int64_t kBlockSize = 512;

absl::Status IndexError(const std::string& uri, int64_t line,
                        absl::string_view what) {
  return WithContext(absl::DataLossError(absl::StrCat(
                         "malformed shard index, line ", line, ": ", what)),
                     {.uri = uri});
}

// Whether `c` is written escaped in an index file: bytes that would split or
// end the space-separated line (whitespace and control bytes) and the escape
// character itself.
bool NeedsEscape(unsigned char c) { return c <= 0x20 || c == 0x7f || c == '\\'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A member name or extension as written in an index file: each byte for
// which NeedsEscape() holds becomes "\xHH" (two lowercase hex digits).
std::string EscapeField(absl::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (NeedsEscape(byte)) {
      out += {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xf]};
    } else {
      out += c;
    }
  }
  return out;
}

// The inverse of EscapeField(). A backslash not followed by "x" and two hex
// digits is kept as it is: indexes written by other tools (DALI's wds2idx)
// do not escape.
std::string UnescapeField(absl::string_view text) {
  if (text.find('\\') == absl::string_view::npos) return std::string(text);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() &&
        text[i + 1] == 'x' && HexValue(text[i + 2]) >= 0 &&
        HexValue(text[i + 3]) >= 0) {
      out += static_cast<char>(HexValue(text[i + 2]) << 4 | HexValue(text[i + 3]));
      i += 3;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

absl::string_view ShardIndex::key(int64_t sample) const {
  const uint32_t begin = sample == 0 ? 0 : key_end_[sample - 1];
  return absl::string_view(keys_).substr(begin, key_end_[sample] - begin);
}

absl::Span<const IndexedMember> ShardIndex::members(int64_t sample) const {
  const uint32_t begin = first_member_[sample];
  const uint32_t end = sample + 1 < num_samples()
                           ? first_member_[sample + 1]
                           : static_cast<uint32_t>(members_.size());
  return absl::MakeConstSpan(members_).subspan(begin, end - begin);
}

int64_t ShardIndex::header_offset(int64_t sample) const {
  return header_offsets_[sample];
}

void ShardIndex::AddSample(absl::string_view key) {
  keys_.append(key.data(), key.size());
  key_end_.push_back(static_cast<uint32_t>(keys_.size()));
  first_member_.push_back(static_cast<uint32_t>(members_.size()));
  header_offsets_.push_back(-1);
}

void ShardIndex::AddMember(absl::string_view extension, int64_t offset,
                           int64_t size) {
  auto found = std::find(extensions_.begin(), extensions_.end(), extension);
  if (found == extensions_.end()) {
    found = extensions_.insert(extensions_.end(), std::string(extension));
  }
  members_.push_back({.offset = offset,
                      .size = size,
                      .extension = static_cast<uint32_t>(found - extensions_.begin())});
  if (header_offsets_.back() < 0) header_offsets_.back() = offset - kBlockSize;
}

absl::Status ScanShardIndex(std::unique_ptr<ByteSource> shard, ShardIndex* index) {
  SampleReader reader(std::move(shard), std::vector<std::string>{});
  Sample sample;
  while (true) {
    SL_ASSIGN_OR_RETURN(const bool read, reader.Next(&sample));
    if (!read) return absl::OkStatus();
    index->AddSample(sample.key);
    for (const SampleField& field : sample.fields) {
      index->AddMember(field.extension, field.offset, field.size);
    }
    index->SetHeaderOffset(sample.offset);
  }
}

absl::StatusOr<ShardIndex> ParseShardIndex(absl::string_view text,
                                           const std::string& uri) {
  std::vector<absl::string_view> lines =
      absl::StrSplit(text, '\n', absl::SkipWhitespace());
  if (lines.empty()) return IndexError(uri, 1, "empty");
  std::vector<absl::string_view> head =
      absl::StrSplit(lines[0], ' ', absl::SkipEmpty());
  int64_t count = 0;
  if (head.size() != 2 || (head[0] != "v1.1" && head[0] != "v1.2") ||
      !absl::SimpleAtoi(head[1], &count)) {
    return IndexError(uri, 1, "expected \"v1.1 <samples>\" or \"v1.2 <samples>\"");
  }
  const bool named = head[0] == "v1.2";
  const size_t group = named ? 4 : 3;
  if (count != static_cast<int64_t>(lines.size()) - 1) {
    return IndexError(uri, 1, absl::StrCat("announces ", count, " samples, has ",
                                           lines.size() - 1));
  }
  ShardIndex index;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<absl::string_view> parts =
        absl::StrSplit(lines[i], ' ', absl::SkipEmpty());
    if (parts.empty() || parts.size() % group != 0) {
      return IndexError(uri, i + 1, "expected groups of extension, offset, size" +
                                        std::string(named ? ", name" : ""));
    }
    for (size_t p = 0; p < parts.size(); p += group) {
      int64_t offset = 0;
      int64_t size = 0;
      if (!absl::SimpleAtoi(parts[p + 1], &offset) ||
          !absl::SimpleAtoi(parts[p + 2], &size) || offset < kBlockSize ||
          size < 0) {
        return IndexError(uri, i + 1, "bad offset or size");
      }
      if (p == 0) {
        // v1.2 names the member; v1.1 only numbers it, so the key is the
        // sample's number in the shard.
        const std::string name =
            named ? UnescapeField(parts[3]) : absl::StrCat(i - 1);
        std::optional<KeyAndExtension> split;
        if (named) split = SplitKey(name);
        if (named && !split.has_value()) {
          return IndexError(uri, i + 1, "a member name without an extension");
        }
        index.AddSample(named ? split->key : absl::string_view(name));
      }
      index.AddMember(UnescapeField(parts[p]), offset, size);
    }
  }
  return index;
}

namespace {

// Whether `member` lies inside a shard of `shard_size` bytes, after the
// header block in front of its data. No sum can overflow.
bool MemberInside(const IndexedMember& member, int64_t shard_size) {
  return member.offset >= kBlockSize && member.size >= 0 &&
         member.offset <= shard_size && member.size <= shard_size - member.offset;
}

std::string MemberOutside(const IndexedMember& member, int64_t shard_size) {
  return absl::StrCat("a member of ", member.size, " bytes at offset ",
                      member.offset, " does not fit in the shard (",
                      shard_size, " bytes)");
}

}  // namespace

absl::Status CheckShardIndexBounds(const ShardIndex& index, int64_t shard_size,
                                   const std::string& shard_uri,
                                   const std::string& index_uri) {
  for (int64_t i = 0; i < index.num_samples(); ++i) {
    for (const IndexedMember& member : index.members(i)) {
      if (MemberInside(member, shard_size)) continue;
      // Line 1 is the header; sample i is described on line i + 2.
      return WithContext(
          absl::DataLossError(absl::StrCat(
              "bad shard index ", index_uri, ", line ", i + 2, ": ",
              MemberOutside(member, shard_size), " (the index is damaged, or "
              "the shard changed after indexing)")),
          {.uri = shard_uri,
           .offset = member.offset,
           .key = std::string(index.key(i))});
    }
  }
  return absl::OkStatus();
}

std::string FormatShardIndex(const ShardIndex& index) {
  std::string out = absl::StrCat("v1.2 ", index.num_samples(), "\n");
  for (int64_t i = 0; i < index.num_samples(); ++i) {
    const char* separator = "";
    for (const IndexedMember& member : index.members(i)) {
      const std::string extension =
          EscapeField(index.extension(member.extension));
      absl::StrAppend(&out, separator, extension, " ", member.offset, " ",
                      member.size, " ", EscapeField(index.key(i)), ".",
                      extension);
      separator = " ";
    }
    out += '\n';
  }
  return out;
}

absl::StatusOr<int64_t> WriteShardIndexFile(const std::string& uri,
                                            const SourceOptions& options) {
  SL_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, OpenSource(uri, options));
  ShardIndex index;
  SL_RETURN_IF_ERROR(ScanShardIndex(std::move(source), &index));
  SL_RETURN_IF_ERROR(
      WriteWholeFile(IndexUriFor(uri), FormatShardIndex(index), options));
  return index.num_samples();
}

std::string IndexUriFor(const std::string& shard_uri) {
  // An http(s) URL's query and fragment (a presigned URL's token) are kept.
  size_t end = shard_uri.size();
  if (absl::StartsWith(shard_uri, "http://") ||
      absl::StartsWith(shard_uri, "https://")) {
    end = std::min(shard_uri.find('?'), shard_uri.find('#'));
    if (end == std::string::npos) end = shard_uri.size();
  }
  const absl::string_view path = absl::string_view(shard_uri).substr(0, end);
  const absl::string_view suffix = absl::string_view(shard_uri).substr(end);
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  if (dot == absl::string_view::npos ||
      (slash != absl::string_view::npos && dot < slash)) {
    return absl::StrCat(path, ".idx", suffix);
  }
  return absl::StrCat(path.substr(0, dot), ".idx", suffix);
}

absl::Status ReadIndexedSample(std::shared_ptr<const RandomAccessSource> shard,
                               const ShardIndex& index, int64_t sample,
                               absl::Span<const std::string> wanted,
                               Sample* out) {
  out->key.assign(index.key(sample).data(), index.key(sample).size());
  out->offset = index.header_offset(sample);
  out->index = sample;
  const absl::Span<const IndexedMember> members = index.members(sample);
  const bool viewed = !shard->mapped().empty();
  out->backing.reset();
  out->fields.resize(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    const IndexedMember& member = members[i];
    SampleField& field = out->fields[i];
    field.extension = index.extension(member.extension);
    field.offset = member.offset;
    field.size = member.size;
    field.data.clear();
    field.view = {};
    if (!wanted.empty() &&
        std::find(wanted.begin(), wanted.end(), field.extension) == wanted.end()) {
      continue;
    }
    if (!MemberInside(member, shard->size())) {
      return WithContext(
          absl::DataLossError(absl::StrCat(
              "the index says ", MemberOutside(member, shard->size()))),
          {.uri = shard->uri(), .offset = member.offset, .key = out->key});
    }
    // The header in front of the data is read with it and checked.
    const int64_t header = member.offset - kBlockSize;
    const size_t size = kBlockSize + static_cast<size_t>(member.size);
    std::string_view bytes;
    if (viewed) {
      absl::StatusOr<std::string_view> view = shard->ViewAt(header, size);
      SL_RETURN_IF_ERROR(WithContext(view.status(), {.key = out->key}));
      bytes = *view;
    } else {
      field.data.resize(size);
      SL_RETURN_IF_ERROR(WithContext(shard->ReadAt(header, size, field.data.data()),
                                     {.key = out->key}));
      bytes = field.data;
    }
    if (!IsHeaderOfSize(bytes.data(), member.size)) {
      return WithContext(
          absl::DataLossError(absl::StrCat(
              "the index says a ", member.size, "-byte member '", out->key, ".",
              field.extension, "' starts here, but no matching tar header "
              "precedes it (the shard is damaged or changed after indexing)")),
          {.uri = shard->uri(), .offset = header, .key = out->key});
    }
    if (viewed) {
      field.view = bytes.substr(kBlockSize);
    } else {
      field.data.erase(0, kBlockSize);
    }
  }
  if (viewed) out->backing = std::move(shard);
  return absl::OkStatus();
}

}  // namespace shardloader
