#include "shardloader/plan/shard_list.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "shardloader/io/byte_source.h"
#include "shardloader/io/open/open_source.h"
#include "shardloader/io/uri.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

constexpr int64_t kMaxExpansion = 10'000'000;
// Characters of all names a pattern expands to, so that a few ranges in one
// pattern cannot exhaust memory (about 2 million names of 64 characters).
constexpr int64_t kMaxExpansionBytes = int64_t{128} << 20;

// Finds the first top-level "{...}" group; returns false if there is none.
absl::StatusOr<bool> FindGroup(absl::string_view pattern, size_t* open, size_t* close) {
  const size_t start = pattern.find('{');
  if (start == absl::string_view::npos) {
    if (pattern.find('}') != absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("unbalanced '}' in shard pattern \"", pattern, "\""));
    }
    return false;
  }
  int depth = 0;
  for (size_t i = start; i < pattern.size(); ++i) {
    if (pattern[i] == '{') ++depth;
    if (pattern[i] == '}' && --depth == 0) {
      *open = start;
      *close = i;
      return true;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unbalanced '{' in shard pattern \"", pattern, "\""));
}

bool HasLeadingZero(absl::string_view digits) {
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    digits.remove_prefix(1);
  }
  return digits.size() > 1 && digits[0] == '0';
}

// Expands the body of one group: "a..b" (numeric) or "x,y,z" (alternatives,
// which may nest groups). Returns the items, not yet combined with the rest.
absl::StatusOr<std::vector<std::string>> ExpandGroup(absl::string_view body) {
  const std::vector<absl::string_view> bounds = absl::StrSplit(body, "..");
  int64_t first = 0;
  int64_t last = 0;
  if (bounds.size() == 2 && absl::SimpleAtoi(bounds[0], &first) &&
      absl::SimpleAtoi(bounds[1], &last)) {
    const int64_t count = (first <= last ? last - first : first - last) + 1;
    if (count > kMaxExpansion) {
      return absl::InvalidArgumentError(
          absl::StrCat("brace range {", body, "} has more than ", kMaxExpansion, " items"));
    }
    const size_t width = (HasLeadingZero(bounds[0]) || HasLeadingZero(bounds[1]))
                             ? std::max(bounds[0].size(), bounds[1].size())
                             : 0;
    std::vector<std::string> items;
    items.reserve(count);
    const int64_t step = first <= last ? 1 : -1;
    for (int64_t i = 0, value = first; i < count; ++i, value += step) {
      items.push_back(absl::StrFormat("%0*d", width, value));
    }
    return items;
  }
  // Alternatives: split on top-level commas.
  std::vector<std::string> items;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    if (i < body.size() && body[i] == '{') ++depth;
    if (i < body.size() && body[i] == '}') --depth;
    if (i == body.size() || (body[i] == ',' && depth == 0)) {
      SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> expanded,
                                   ExpandBraces(body.substr(begin, i - begin)));
      for (std::string& item : expanded) items.push_back(std::move(item));
      begin = i + 1;
    }
  }
  return items;
}

absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) {
  std::error_code error;
  std::vector<std::string> shards;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".tar") {
      shards.push_back(entry.path().string());
    }
  }
  if (error) {
    return WithContext(
        absl::NotFoundError(absl::StrCat("cannot list shard directory: ", error.message())),
        {.uri = dir});
  }
  std::sort(shards.begin(), shards.end());
  return shards;
}

constexpr char kIndexName[] = "index.json";
constexpr size_t kMaxIndexBytes = size_t{256} << 20;

bool IsLocal(absl::string_view name) { return name.find("://") == absl::string_view::npos; }

absl::StatusOr<std::string> ReadWholeSource(const std::string& uri, const SourceOptions& source) {
  SHARDLOADER_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> in, OpenSource(uri, source));
  std::string content;
  std::string buffer(size_t{1} << 16, '\0');
  while (true) {
    SHARDLOADER_ASSIGN_OR_RETURN(const size_t got, in->Read(buffer.data(), buffer.size()));
    if (got == 0) break;
    content.append(buffer.data(), got);
    if (content.size() > kMaxIndexBytes) {
      return WithContext(absl::InvalidArgumentError(
                             absl::StrCat("shard index is larger than ", kMaxIndexBytes, " bytes")),
                         {.uri = uri});
    }
  }
  return content;
}

// The shards listed by the shardloader index (ShardWriter's index.json) in
// `content`, read from `uri`: names relative to the index's folder, URIs
// and absolute paths as they are. nullopt if `content` is not such an index.
absl::StatusOr<std::optional<std::vector<std::string>>> ParseIndex(const std::string& content,
                                                                   const std::string& uri) {
  const nlohmann::json index = nlohmann::json::parse(content, nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object() || !index.contains("format") ||
      index["format"] != "shardloader-index" || !index.contains("shards") ||
      !index["shards"].is_array()) {
    return std::nullopt;
  }
  const size_t slash = uri.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : uri.substr(0, slash + 1);
  std::vector<std::string> shards;
  for (const nlohmann::json& entry : index["shards"]) {
    if (!entry.is_object() || !entry.contains("url") || !entry["url"].is_string()) {
      return WithContext(absl::InvalidArgumentError(
                             "shard index has an entry without a \"url\" string: rewrite it "
                             "with `shardloader pack` or ShardWriter"),
                         {.uri = uri});
    }
    const std::string url = entry["url"].get<std::string>();
    if (!IsLocal(url) || absl::StartsWith(url, "/")) {
      shards.push_back(url);
    } else if (IsLocal(uri)) {
      shards.push_back((std::filesystem::path(folder.empty() ? "." : folder) / url).string());
    } else {
      shards.push_back(absl::StrCat(folder, url));
    }
  }
  return shards;
}

// NotFound naming the index if a local shard it lists is missing.
absl::Status CheckListedExist(const std::vector<std::string>& shards, const std::string& index) {
  for (const std::string& shard : shards) {
    std::error_code error;
    if (IsLocal(shard) && !std::filesystem::exists(shard, error)) {
      return WithContext(absl::NotFoundError(absl::StrCat(
                             "the index lists shard ", shard,
                             ", which does not exist: the dataset is incomplete; pack it again")),
                         {.uri = index});
    }
  }
  return absl::OkStatus();
}

// The shards the index at `uri` lists; local ones must exist.
absl::StatusOr<std::vector<std::string>> ReadIndex(const std::string& uri,
                                                   const SourceOptions& source) {
  SHARDLOADER_ASSIGN_OR_RETURN(const std::string content, ReadWholeSource(uri, source));
  SHARDLOADER_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> shards,
                               ParseIndex(content, uri));
  if (!shards.has_value()) {
    return WithContext(absl::InvalidArgumentError(
                           "not a shard index written by `shardloader pack` or ShardWriter "
                           "(no \"format\": \"shardloader-index\"); name the shards instead"),
                       {.uri = uri});
  }
  SHARDLOADER_RETURN_IF_ERROR(CheckListedExist(*shards, uri));
  return *std::move(shards);
}

// Adds to `warnings` how many *.tar files lie in `dir` beside `listed`.
absl::Status WarnAboutOthers(const std::string& dir, const std::string& index,
                             const std::vector<std::string>& listed,
                             std::vector<std::string>* warnings) {
  if (warnings == nullptr) return absl::OkStatus();
  SHARDLOADER_ASSIGN_OR_RETURN(const std::vector<std::string> present, ListDirectory(dir));
  std::set<std::string> names;
  for (const std::string& shard : listed) {
    names.insert(std::filesystem::path(shard).lexically_normal().string());
  }
  int64_t others = 0;
  for (const std::string& shard : present) {
    if (names.count(std::filesystem::path(shard).lexically_normal().string()) == 0) ++others;
  }
  if (others > 0) {
    warnings->push_back(absl::StrFormat(
        "%s lists %d shards; %d other .tar file%s beside them in %s %s not read (left by an "
        "earlier pack? remove them, or name the shards you want)",
        index, listed.size(), others, others == 1 ? "" : "s", dir, others == 1 ? "is" : "are"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandBraces(absl::string_view pattern) {
  size_t open = 0;
  size_t close = 0;
  SHARDLOADER_ASSIGN_OR_RETURN(const bool found, FindGroup(pattern, &open, &close));
  if (!found) return std::vector<std::string>{std::string(pattern)};
  SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> middle,
                               ExpandGroup(pattern.substr(open + 1, close - open - 1)));
  SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> rest,
                               ExpandBraces(pattern.substr(close + 1)));
  const absl::string_view prefix = pattern.substr(0, open);
  auto total_size = [](const std::vector<std::string>& names) {
    int64_t bytes = 0;
    for (const std::string& name : names) bytes += static_cast<int64_t>(name.size());
    return bytes;
  };
  const int64_t count = static_cast<int64_t>(middle.size()) * static_cast<int64_t>(rest.size());
  if (count > kMaxExpansion || count * static_cast<int64_t>(prefix.size()) +
                                       static_cast<int64_t>(rest.size()) * total_size(middle) +
                                       static_cast<int64_t>(middle.size()) * total_size(rest) >
                                   kMaxExpansionBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard pattern \"", pattern, "\" expands to more than ", kMaxExpansion,
                     " names or ", kMaxExpansionBytes >> 20, " MiB of names"));
  }
  std::vector<std::string> result;
  result.reserve(middle.size() * rest.size());
  for (const std::string& item : middle) {
    for (const std::string& tail : rest) {
      result.push_back(absl::StrCat(prefix, item, tail));
    }
  }
  return result;
}

absl::StatusOr<std::vector<std::string>> ResolveShards(absl::Span<const std::string> specs) {
  return ResolveShards(specs, SourceOptions());
}

absl::StatusOr<std::vector<std::string>> ResolveShards(absl::Span<const std::string> specs,
                                                       const SourceOptions& source) {
  return ResolveShards(specs, source, nullptr);
}

absl::StatusOr<std::vector<std::string>> ResolveShards(absl::Span<const std::string> specs,
                                                       const SourceOptions& source,
                                                       std::vector<std::string>* warnings) {
  std::vector<std::string> shards;
  for (const std::string& joined : specs) {
    for (absl::string_view spec : absl::StrSplit(joined, "::", absl::SkipEmpty())) {
      SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> expanded, ExpandBraces(spec));
      for (std::string& name : expanded) {
        // Remote prefixes (io/remote/remote_source.h): listed, *.tar kept.
        if (IsRemoteUri(name) && absl::EndsWith(name, "/")) {
          SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> listed, ListPrefix(name, source));
          for (std::string& uri : listed) {
            if (absl::EndsWith(uri, ".tar")) shards.push_back(std::move(uri));
          }
          continue;
        }
        // A shardloader index: the shards it lists.
        if (absl::EndsWith(name, ".json")) {
          SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> listed, ReadIndex(name, source));
          if (IsLocal(name)) {
            const std::string dir = std::filesystem::path(name).parent_path().string();
            SHARDLOADER_RETURN_IF_ERROR(
                WarnAboutOthers(dir.empty() ? "." : dir, name, listed, warnings));
          }
          for (std::string& shard : listed) shards.push_back(std::move(shard));
          continue;
        }
        std::error_code error;
        if (IsLocal(name) && std::filesystem::is_directory(name, error)) {
          // A folder written by pack: read as written, through its index.
          const std::string index = (std::filesystem::path(name) / kIndexName).string();
          std::optional<std::vector<std::string>> indexed;
          if (std::filesystem::is_regular_file(index, error)) {
            SHARDLOADER_ASSIGN_OR_RETURN(const std::string content, ReadWholeSource(index, source));
            SHARDLOADER_ASSIGN_OR_RETURN(indexed, ParseIndex(content, index));
          }
          if (indexed.has_value()) {
            SHARDLOADER_RETURN_IF_ERROR(CheckListedExist(*indexed, index));
            SHARDLOADER_RETURN_IF_ERROR(WarnAboutOthers(name, index, *indexed, warnings));
            for (std::string& shard : *indexed) shards.push_back(std::move(shard));
            continue;
          }
          SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> listed, ListDirectory(name));
          for (std::string& shard : listed) shards.push_back(std::move(shard));
        } else {
          shards.push_back(std::move(name));
        }
      }
    }
  }
  if (shards.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no shards: \"", absl::StrJoin(specs, "\", \""),
                     "\" names no shard (an empty list, or a directory without .tar files)"));
  }
  return shards;
}

}  // namespace shardloader
