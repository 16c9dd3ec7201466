// Shard lists and sample-level reading of one shard (for `inspect` and
// tests).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string_view>

#include "bindings/status.h"
#include "shardloader/format/sample_reader.h"
#include "shardloader/format/shard_index.h"
#include "shardloader/io/open/open_source.h"
#include "shardloader/plan/shard_list.h"

namespace shardloader::bindings {

namespace py = pybind11;

void RegisterShards(py::module_& m) {
  m.def("expand_braces", [](const std::string& pattern) { return Unwrap(ExpandBraces(pattern)); });
  m.def(
      "resolve_shards",
      [](const std::vector<std::string>& specs, const SourceOptions& source) {
        return WithoutGil([&] { return ResolveShards(specs, source); });
      },
      py::arg("specs"), py::arg("source") = SourceOptions());
  // (shards, warnings): warnings as ResolveShards gives them, for the CLI.
  m.def(
      "resolve_shards_with_warnings",
      [](const std::vector<std::string>& specs, const SourceOptions& source) {
        std::vector<std::string> warnings;
        std::vector<std::string> shards =
            WithoutGil([&] { return ResolveShards(specs, source, &warnings); });
        return py::make_tuple(shards, warnings);
      },
      py::arg("specs"), py::arg("source") = SourceOptions());
  m.def(
      "write_shard_index",
      [](const std::string& uri, const SourceOptions& source) {
        return WithoutGil([&] { return WriteShardIndexFile(uri, source); });
      },
      py::arg("uri"), py::arg("source") = SourceOptions());

  py::class_<SampleReader>(m, "SampleReader")
      .def(py::init([](const std::string& uri, bool read_data) {
             std::unique_ptr<ByteSource> source = Unwrap(OpenSource(uri));
             return std::make_unique<SampleReader>(
                 std::move(source),
                 read_data ? std::nullopt : std::optional(std::vector<std::string>{}));
           }),
           py::arg("uri"), py::arg("read_data") = true)
      // Returns (key, offset, index, {extension: bytes}) or None at the end.
      .def("next", [](SampleReader& reader) -> py::object {
        Sample sample;
        if (!WithoutGil([&] { return reader.Next(&sample); })) return py::none();
        py::dict fields;
        for (const SampleField& field : sample.fields) {
          const std::string_view bytes = field.bytes();
          fields[py::str(field.extension)] = py::bytes(bytes.data(), bytes.size());
        }
        return py::make_tuple(sample.key, sample.offset, sample.index, fields);
      });
}

}  // namespace shardloader::bindings
