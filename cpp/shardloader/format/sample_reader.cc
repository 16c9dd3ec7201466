#include "shardloader/format/sample_reader.h"

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

bool IsMetadata(absl::string_view path) {
  const size_t slash = path.rfind('/');
  const absl::string_view name = slash == absl::string_view::npos ? path : path.substr(slash + 1);
  const absl::string_view stem = name.substr(0, name.find('.'));
  return stem.size() >= 4 && absl::StartsWith(stem, "__") && absl::EndsWith(stem, "__");
}

}  // namespace

SampleReader::SampleReader(std::unique_ptr<ByteSource> source,
                           std::optional<std::vector<std::string>> wanted_extensions)
    : source_(std::move(source)),
      uri_(std::make_shared<const std::string>(source_->uri())),
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
    SHARDLOADER_ASSIGN_OR_RETURN(std::optional<TarMember> member, tar_.Next());
    if (!member.has_value()) {
      if (next_index_ == 0 && first_skipped_.has_value()) {
        return WithContext(absl::DataLossError(absl::StrCat(
                               "the shard holds tar members but no sample: no regular file "
                               "named KEY.EXTENSION (the first member is '",
                               absl::CHexEscape(first_skipped_->second.substr(0, 200)), "')")),
                           {.uri = *uri_, .offset = first_skipped_->first});
      }
      return std::nullopt;
    }
    if (member->type == TarEntryType::kRegular && !IsMetadata(member->name) &&
        SplitKey(member->name).has_value()) {
      return member;
    }
    if (!first_skipped_.has_value()) {
      first_skipped_.emplace(member->header_offset, member->name);
    }
  }
}

absl::StatusOr<bool> SampleReader::Next(Sample* sample) {
  if (!pending_.has_value()) {
    SHARDLOADER_ASSIGN_OR_RETURN(pending_, NextDataMember());
    if (!pending_.has_value()) return false;
  }
  sample->shard = uri_;
  sample->offset = pending_->header_offset;
  sample->index = next_index_++;
  const absl::string_view key = SplitKey(pending_->name)->key;
  sample->key.assign(key.data(), key.size());
  sample->backing.reset();
  size_t num_fields = 0;
  while (pending_.has_value()) {
    const KeyAndExtension split = *SplitKey(pending_->name);
    if (split.key != sample->key) break;
    for (size_t i = 0; i < num_fields; ++i) {
      if (sample->fields[i].extension == split.extension) {
        return WithContext(absl::DataLossError(absl::StrCat("repeated extension '", split.extension,
                                                            "' in one sample")),
                           {.uri = *uri_, .offset = pending_->header_offset, .key = sample->key});
      }
    }
    if (num_fields == sample->fields.size()) sample->fields.emplace_back();
    SampleField& field = sample->fields[num_fields++];
    field.extension = split.extension;
    field.offset = pending_->data_offset;
    field.size = pending_->size;
    field.view = {};
    if (Wanted(split.extension)) {
      SHARDLOADER_RETURN_IF_ERROR(WithContext(tar_.ReadData(&field.data), {.key = sample->key}));
    } else {
      field.data.clear();
    }
    SHARDLOADER_ASSIGN_OR_RETURN(pending_, NextDataMember());
  }
  sample->fields.resize(num_fields);
  return true;
}

}  // namespace shardloader
