// ShardWriter.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/status.h"
#include "shardloader/shard_writer.h"

namespace shardloader::bindings {

namespace py = pybind11;

void RegisterWriter(py::module_& m) {
  py::class_<ShardInfo>(m, "ShardInfo")
      .def_readonly("path", &ShardInfo::path)
      .def_readonly("num_samples", &ShardInfo::num_samples)
      .def_readonly("size_bytes", &ShardInfo::size_bytes)
      .def_readonly("sha256", &ShardInfo::sha256);

  py::class_<ShardWriter>(m, "ShardWriter")
      .def(py::init([](std::string pattern, int64_t max_size_bytes, int64_t max_samples_per_shard,
                       int64_t first_shard_index, std::string index_path,
                       SourceOptions destination) {
             return Unwrap(ShardWriter::Create({.pattern = std::move(pattern),
                                                .max_size_bytes = max_size_bytes,
                                                .max_samples_per_shard = max_samples_per_shard,
                                                .first_shard_index = first_shard_index,
                                                .index_path = std::move(index_path),
                                                .destination = std::move(destination)}));
           }),
           py::arg("pattern"), py::arg("max_size_bytes"), py::arg("max_samples_per_shard"),
           py::arg("first_shard_index"), py::arg("index_path"),
           py::arg("destination") = SourceOptions())
      .def("write",
           [](ShardWriter& writer, const std::string& key,
              const std::vector<ShardWriter::Field>& fields) {
             WithoutGil([&] { return writer.Write(key, fields); });
           })
      .def("close", [](ShardWriter& writer) { WithoutGil([&] { return writer.Close(); }); })
      .def("abort", &ShardWriter::Abort)
      .def_property_readonly("shards", &ShardWriter::shards)
      .def_property_readonly("index_path", &ShardWriter::index_path);
}

}  // namespace shardloader::bindings
