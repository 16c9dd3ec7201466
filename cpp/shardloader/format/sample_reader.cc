#include "shardloader/format/sample_reader.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shardloader {
namespace {

bool IsMetadata(absl::string_view path) {
  const size_t slash = path.rfind('/');
  const absl::string_view name =
      slash == absl::string_view::npos ? path : path.substr(slash + 1);
  const absl::string_view stem = name.substr(0, name.find('.'));
  return stem.size() >= 4 && absl::StartsWith(stem, "__") &&
         absl::EndsWith(stem, "__");
}

}  // namespace

SampleReader::SampleReader(
    std::unique_ptr<ByteSource> source,
    std::optional<std::vector<std::string>> wanted_extensions)
    : source_(std::move(source)),
      tar_(source_.get()),
      read_all_(!wanted_extensions.has_value()) {
  if (wanted_extensions.has_value()) {
    wanted_.insert(wanted_extensions->begin(), wanted_extensions->end());
  }
}

bool SampleReader::Wanted(absl::string_view extension) const {
  return read_all_ || wanted_.contains(extension);
}

absl::StatusOr<std::optional<TarMember>> SampleReader::NextDataMember() {
  while (true) {
    SL_ASSIGN_OR_RETURN(std::optional<TarMember> member, tar_.Next());
    if (!member.has_value()) return std::nullopt;
    if (member->type == TarEntryType::kRegular && !IsMetadata(member->name) &&
        SplitKey(member->name).has_value()) {
      return member;
    }
  }
}

absl::StatusOr<std::optional<Sample>> SampleReader::Next() {
  if (!pending_.has_value()) {
    SL_ASSIGN_OR_RETURN(pending_, NextDataMember());
    if (!pending_.has_value()) return std::nullopt;
  }
  Sample sample;
  sample.shard = source_->uri();
  sample.offset = pending_->header_offset;
  sample.index = next_index_++;
  sample.key = std::string(SplitKey(pending_->name)->key);
  while (pending_.has_value()) {
    const KeyAndExtension split = *SplitKey(pending_->name);
    if (split.key != sample.key) break;
    if (sample.Find(split.extension) != nullptr) {
      return WithContext(
          absl::DataLossError(absl::StrCat(
              "repeated extension '", split.extension, "' in one sample")),
          {.uri = sample.shard, .offset = pending_->header_offset,
           .key = sample.key});
    }
    SampleField& field = sample.fields.emplace_back();
    field.extension = split.extension;
    if (Wanted(split.extension)) {
      SL_RETURN_IF_ERROR(WithContext(tar_.ReadData(&field.data),
                                     {.key = sample.key}));
    }
    SL_ASSIGN_OR_RETURN(pending_, NextDataMember());
  }
  return sample;
}

}  // namespace shardloader
