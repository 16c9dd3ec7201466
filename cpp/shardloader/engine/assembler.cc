#include "shardloader/engine/assembler.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <new>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "oneapi/tbb/blocked_range.h"
#include "oneapi/tbb/parallel_for.h"
#include "shardloader/decode/decode_field.h"
#include "shardloader/internal/stream_copy.h"
#include "shardloader/plan/epoch_order.h"

namespace shardloader::internal_pipeline {
namespace {

using internal_batch::BatchSlot;
using internal_batch::FieldBuffers;
using internal_batch::StreamCopy;

// The first of the field's extensions present in the sample.
absl::StatusOr<const SampleField*> FindField(const FieldSpec& spec, const Sample& sample) {
  for (const std::string& extension : spec.extensions) {
    if (const SampleField* field = sample.Find(extension)) return field;
  }
  std::vector<absl::string_view> present;
  for (const SampleField& field : sample.fields) present.push_back(field.extension);
  return WithContext(absl::DataLossError(absl::StrCat(
                         "field '", spec.name, "' not found: the sample has no ",
                         absl::StrJoin(spec.extensions, " or "), " (it has ",
                         present.empty() ? "nothing" : absl::StrJoin(present, ", "), ")")),
                     sample.context());
}

// Lays out a ragged field: its offsets and room for its values.
void PrepareRagged(const FieldSpec& spec, absl::Span<const Sample> samples, FieldBuffers& buffers) {
  buffers.offsets.Reserve((samples.size() + 1) * sizeof(int64_t));
  auto* offsets = reinterpret_cast<int64_t*>(buffers.offsets.data());
  offsets[0] = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    // Every row was checked to have the field.
    offsets[i + 1] =
        offsets[i] + static_cast<int64_t>((*FindField(spec, samples[i]))->bytes().size());
  }
  buffers.values.Reserve(static_cast<size_t>(offsets[samples.size()]));
}

// Decodes the fixed-size fields of one sample into row `row` and checks its
// ragged ones (present; UTF-8 for text).
absl::Status DecodeSample(absl::Span<const FieldSpec> fields, const Sample& sample, size_t row,
                          uint64_t sample_seed, BatchSlot& slot) {
  for (size_t f = 0; f < fields.size(); ++f) {
    const FieldSpec& spec = fields[f];
    SHARDLOADER_ASSIGN_OR_RETURN(const SampleField* field, FindField(spec, sample));
    const absl::Status status = DecodeField(
        spec, field->bytes(), sample_seed,
        spec.ragged() ? nullptr : slot.fields[f].values.data() + row * spec.sample_bytes());
    if (!status.ok()) {
      return WithContext(
          absl::Status(status.code(), absl::StrCat("field '", spec.name, "' (.", field->extension,
                                                   "): ", status.message())),
          sample.context());
    }
  }
  return absl::OkStatus();
}

// Copies the ragged fields of one sample into place.
void CopyRagged(absl::Span<const FieldSpec> fields, const Sample& sample, size_t row,
                BatchSlot& slot) {
  for (size_t f = 0; f < fields.size(); ++f) {
    if (!fields[f].ragged()) continue;
    FieldBuffers& buffers = slot.fields[f];
    const std::string_view data = (*FindField(fields[f], sample))->bytes();
    const auto* offsets = reinterpret_cast<const int64_t*>(buffers.offsets.data());
    StreamCopy(buffers.values.data() + offsets[row], data.data(), data.size());
  }
}

TensorView MakeView(DType dtype, std::vector<int64_t> shape, uint8_t* data) {
  return TensorView{.dtype = dtype, .shape = std::move(shape), .data = data};
}

}  // namespace

absl::StatusOr<Batch> AssembleBatch(absl::Span<const FieldSpec> fields, absl::Span<Sample> samples,
                                    absl::Span<const absl::Status> read_errors,
                                    std::shared_ptr<BatchSlot> slot, tbb::task_arena* arena,
                                    int num_threads, const OrderOptions& order, ReplaceFn replace) {
  const int64_t num_samples = static_cast<int64_t>(samples.size());
  for (size_t f = 0; f < fields.size(); ++f) {
    if (fields[f].ragged()) continue;
    // The size is bounded by FieldSpec::ValidateBatch, yet may not be there.
    const size_t bytes = samples.size() * fields[f].sample_bytes();
    try {
      slot->fields[f].values.Reserve(bytes);
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(
          absl::StrCat("field '", fields[f].name, "': could not allocate ", bytes,
                       " bytes for a batch of ", samples.size(), " samples"));
    }
  }

  absl::Mutex mu;
  size_t first_error_row = std::numeric_limits<size_t>::max();
  absl::Status first_error;
  auto for_each_row = [&](auto&& body) {
    if (arena == nullptr) {
      // No TBB in this process (a forked child: see Pipeline): plain threads.
      std::atomic<size_t> next{0};
      auto work = [&] {
        for (size_t row = next++; row < samples.size(); row = next++) body(row);
      };
      std::vector<std::thread> threads;
      const size_t wanted = std::min<size_t>(std::max(1, num_threads), samples.size());
      for (size_t t = 1; t < wanted; ++t) threads.emplace_back(work);
      work();
      for (std::thread& thread : threads) thread.join();
      return;
    }
    arena->execute([&] {
      tbb::parallel_for(tbb::blocked_range<size_t>(0, samples.size()),
                        [&](const tbb::blocked_range<size_t>& rows) {
                          for (size_t row = rows.begin(); row != rows.end(); ++row) {
                            body(row);
                          }
                        });
    });
  };
  for_each_row([&](size_t row) {
    absl::Status status = read_errors[row];
    int tries = 0;
    while (true) {
      Sample& sample = samples[row];
      if (status.ok()) {
        status = DecodeSample(
            fields, sample, row,
            SampleAugmentationSeed(order.seed, order.epoch, sample.shard_index, sample.index),
            *slot);
      }
      if (status.ok()) return;
      status = replace(row, status, &tries, &sample);
      if (!status.ok()) break;
    }
    absl::MutexLock lock(&mu);
    if (row < first_error_row) {
      first_error_row = row;
      first_error = std::move(status);
    }
  });
  if (!first_error.ok()) return first_error;
  bool any_ragged = false;
  for (size_t f = 0; f < fields.size(); ++f) {
    if (!fields[f].ragged()) continue;
    PrepareRagged(fields[f], samples, slot->fields[f]);
    any_ragged = true;
  }
  if (any_ragged) {
    for_each_row([&](size_t row) { CopyRagged(fields, samples[row], row, *slot); });
  }

  std::vector<BatchField> views;
  views.reserve(fields.size());
  bool pinned = true;
  for (size_t f = 0; f < fields.size(); ++f) {
    const FieldSpec& spec = fields[f];
    FieldBuffers& buffers = slot->fields[f];
    BatchField& view = views.emplace_back();
    view.name = spec.name;
    if (spec.ragged()) {
      const auto* offsets = reinterpret_cast<const int64_t*>(buffers.offsets.data());
      view.values = MakeView(DType::kUInt8, {offsets[num_samples]}, buffers.values.data());
      view.offsets = MakeView(DType::kInt64, {num_samples + 1}, buffers.offsets.data());
      pinned = pinned && buffers.offsets.pinned();
    } else {
      std::vector<int64_t> shape = {num_samples};
      for (int64_t dim : spec.sample_shape()) shape.push_back(dim);
      view.values = MakeView(spec.batch_dtype(), std::move(shape), buffers.values.data());
    }
  }
  for (const FieldBuffers& buffers : slot->fields) {
    pinned = pinned && buffers.values.pinned();
  }
  std::vector<std::string> keys;
  keys.reserve(samples.size());
  for (const Sample& sample : samples) keys.push_back(sample.key);
  return Batch(num_samples, std::move(views), std::move(keys),
               std::shared_ptr<const void>(std::move(slot)), pinned);
}

}  // namespace shardloader::internal_pipeline
