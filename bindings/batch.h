// Batch to NumPy: zero-copy arrays that keep the batch memory alive.
#ifndef SHARDLOADER_BINDINGS_BATCH_H_
#define SHARDLOADER_BINDINGS_BATCH_H_

#include <pybind11/pybind11.h>

#include "shardloader/batch.h"

namespace shardloader::bindings {

// Returns (num_samples, [(name, values, offsets or None), ...], keys) where
// values and offsets are NumPy arrays viewing the batch's memory.
pybind11::tuple BatchToPython(const Batch& batch);

}  // namespace shardloader::bindings

#endif  // SHARDLOADER_BINDINGS_BATCH_H_
