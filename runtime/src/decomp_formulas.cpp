#include "decomp_formulas.h"

#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include "errors.h"
#include "formula_builtins.h"
#include "ops.h"
#include "pipeline_run.h"

namespace hwport::pipeline {

namespace {

uint64_t g_calls = 0, g_failures = 0;  // under the GIL

using namespace formula;  // NOLINT: the generated code calls the builtins unqualified

#include "decomp_formulas.inc"

}  // namespace

const FormulaEntry* formula_entry(int op_id) { return formula_table(op_id); }

PyObject* run_formula(const OpSpec& op, PyObject* const* in, const BoundArgs& a) {
  const FormulaEntry* e = formula_entry(op.id);
  if (!e) return nullptr;
  PyObject* at[kMaxParams] = {};
  for (int k = 0; k < e->num_attrs; ++k) {
    PyObject* given = a.slot[op.num_inputs + k];
    at[k] = given ? given : e->defaults[k];
  }
  PyObject* out = nullptr;
  try {
    out = e->fn(in, at);
  } catch (const Error&) {
    // an up()/down() cast refused: the Python path redoes the call and raises its message
  } catch (pybind11::error_already_set& e) {
    e.restore();
  }
  if (!out) {
    // The Python path redoes the call (kernels are pure, outputs fresh) and raises the
    // composite's own message rather than a sub-op's.
    PyErr_Clear();
    ++g_failures;
    return nullptr;
  }
  ++g_calls;
  return out;
}

uint64_t formula_calls() { return g_calls; }
uint64_t formula_failures() { return g_failures; }

}  // namespace hwport::pipeline
