// Bindings of SourceOptions: how shards are opened and read.
#include <pybind11/pybind11.h>

#include "shardloader/io/open_source.h"

namespace py = pybind11;

namespace shardloader::bindings {

void RegisterSource(py::module_& m) {
  py::class_<SourceOptions>(m, "SourceOptions")
      .def(py::init<>())
      .def_readwrite("block_size_bytes", &SourceOptions::block_size_bytes)
      .def_readwrite("max_unseekable_bytes", &SourceOptions::max_unseekable_bytes);
}

}  // namespace shardloader::bindings
