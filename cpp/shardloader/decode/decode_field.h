// DecodeField: one sample's value of one declared field, decoded: the switch
// over FieldKind that the engine's batch assembly (engine/assembler.h) calls
// for every field of every sample, so the engine includes this one decode
// header. The decoders behind it: image.h (JPEG/PNG, resized with
// resample.h, which is private to decode/), npy.h, text.h.
//
// Thread-safety: thread-safe (no shared state).
#ifndef SHARDLOADER_DECODE_DECODE_FIELD_H_
#define SHARDLOADER_DECODE_DECODE_FIELD_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "shardloader/decode/field.h"

namespace shardloader {

// Decodes `data`, the bytes of the sample's member for `spec`.
// Fixed-size fields (kInt, kNpy, kImage) write spec.sample_bytes() bytes at
// `dst`: an int64, the array's elements in C order, RGB uint8 pixels in the
// declared layout. Ragged fields (kBytes, kText) are only checked (UTF-8 for
// kText) and `dst` is unused: their bytes are copied into the batch as they
// are. `sample_seed` drives random augmentations (SampleAugmentationSeed in
// plan/epoch_order.h). Errors: DataLoss or InvalidArgument from the decoder,
// without sample context (the caller adds shard, offset and key).
absl::Status DecodeField(const FieldSpec& spec, std::string_view data, uint64_t sample_seed,
                         uint8_t* dst);

}  // namespace shardloader

#endif  // SHARDLOADER_DECODE_DECODE_FIELD_H_
