#include "shardloader/decode/decode_field.h"

#include <cstring>

#include "shardloader/decode/image.h"
#include "shardloader/decode/npy.h"
#include "shardloader/decode/text.h"
#include "shardloader/status.h"

namespace shardloader {

absl::Status DecodeField(const FieldSpec& spec, std::string_view data, uint64_t sample_seed,
                         uint8_t* dst) {
  switch (spec.kind) {
    case FieldKind::kInt: {
      SHARDLOADER_ASSIGN_OR_RETURN(const int64_t label, ParseIntLabel(data));
      std::memcpy(dst, &label, sizeof(label));
      return absl::OkStatus();
    }
    case FieldKind::kNpy:
      return DecodeNpy(data, spec.dtype, spec.shape, reinterpret_cast<char*>(dst));
    case FieldKind::kImage:
      return DecodeImage(data, spec.image, sample_seed, dst);
    case FieldKind::kText:
      return ValidateUtf8(data);
    case FieldKind::kBytes:
      return absl::OkStatus();
  }
  return absl::InternalError("unknown field kind");
}

}  // namespace shardloader
