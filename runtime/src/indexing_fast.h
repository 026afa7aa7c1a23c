// Tensor indexing's fast path (indexing_fast.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace hwport {

// _core._getitem_method(fallback): the Tensor.__getitem__ to bind.
void register_indexing(pybind11::module_& m);

}  // namespace hwport
