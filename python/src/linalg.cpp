// tessel.numpy.linalg and tessel.scipy.linalg: the C++ functions of tessel/linalg.h with
// jax.numpy.linalg's and jax.scipy.linalg's signatures. Results with several arrays come
// back as tuples in JAX's order (the Python side names them).
#include <cmath>
#include <string>

#include "common.h"
#include "tessel/linalg.h"

namespace tessel::python {
namespace {

namespace la = tessel::linalg;
namespace sla = tessel::scipy::linalg;

/// A norm order from Python: a number (inf included) or a name ("fro", "nuc").
std::optional<la::NormOrd> norm_ord(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  if (PyUnicode_Check(h.ptr())) return la::NormOrd(nb::cast<std::string>(h));
  return la::NormOrd(nb::cast<double>(h));
}

std::optional<std::vector<int64_t>> axis_list(nb::handle h) {
  std::optional<Axes> axes = to_axes(h);
  if (!axes) return std::nullopt;
  return std::vector<int64_t>(axes->begin(), axes->end());
}

std::optional<Array> optional_array(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  return to_array(h);
}

std::vector<Array> arrays_of(nb::handle seq) {
  std::vector<Array> out;
  for (nb::handle h : nb::borrow<nb::sequence>(seq)) out.push_back(to_array(h));
  return out;
}

/// scipy's `trans`: 0/1/2 or "N"/"T"/"C".
int trans_code(nb::handle h, const char* op) {
  if (PyUnicode_Check(h.ptr())) {
    std::string t = nb::cast<std::string>(h);
    if (t == "N") return 0;
    if (t == "T") return 1;
    if (t == "C") return 2;
    throw ValueError(std::string(op) + ": trans='" + t + "' is not one of 0, 1, 2, 'N', 'T', 'C'");
  }
  return nb::cast<int>(h);
}

nb::object svd_result(const la::SvdResult& r, bool compute_uv) {
  if (!compute_uv) return nb::cast(r.s);
  return nb::make_tuple(r.u, r.s, r.vh);
}

void bind_numpy_linalg(nb::module_& m) {
  m.def("cholesky", [](nb::handle a, bool upper, bool symmetrize_input) {
    return la::cholesky(to_array(a), upper, symmetrize_input);
  }, nb::arg("a"), nb::arg("upper") = false, nb::arg("symmetrize_input") = true);
  m.def("qr", [](nb::handle a, const std::string& mode) -> nb::object {
    la::QrResult r = la::qr(to_array(a), mode);
    if (mode == "r") return nb::cast(r.r);
    return nb::make_tuple(r.q, r.r);
  }, nb::arg("a"), nb::arg("mode") = "reduced");
  m.def("svd", [](nb::handle a, bool full_matrices, bool compute_uv, bool hermitian) {
    return svd_result(la::svd(to_array(a), full_matrices, compute_uv, hermitian), compute_uv);
  }, nb::arg("a"), nb::arg("full_matrices") = true, nb::arg("compute_uv") = true, nb::arg("hermitian") = false);
  def_arrays(m, "svdvals", &la::svdvals, nb::arg("x"));
  m.def("eigh", [](nb::handle a, nb::handle uplo, bool symmetrize_input) {
    la::EighResult r = la::eigh(to_array(a), uplo.is_none() ? "L" : nb::cast<std::string>(uplo), symmetrize_input);
    return nb::make_tuple(r.eigenvalues, r.eigenvectors);
  }, nb::arg("a"), nb::arg("UPLO").none() = nb::none(), nb::arg("symmetrize_input") = true);
  m.def("eigvalsh", [](nb::handle a, nb::handle uplo, bool symmetrize_input) {
    return la::eigvalsh(to_array(a), uplo.is_none() ? "L" : nb::cast<std::string>(uplo), symmetrize_input);
  }, nb::arg("a"), nb::arg("UPLO").none() = nb::none(), nb::arg("symmetrize_input") = true);
  m.def("eig", [](nb::handle a) {
    la::EigResult r = la::eig(to_array(a));
    return nb::make_tuple(r.eigenvalues, r.eigenvectors);
  }, nb::arg("a"));
  def_arrays(m, "eigvals", &la::eigvals, nb::arg("a"));
  def_arrays(m, "solve", &la::solve, nb::arg("a"), nb::arg("b"));
  def_arrays(m, "inv", &la::inv, nb::arg("a"));
  def_arrays(m, "det", &la::det, nb::arg("a"));
  m.def("slogdet", [](nb::handle a) {
    la::SlogdetResult r = la::slogdet(to_array(a));
    return nb::make_tuple(r.sign, r.logabsdet);
  }, nb::arg("a"));
  m.def("vector_norm", [](nb::handle x, nb::handle ord, nb::handle axis, bool keepdims) {
    return la::vector_norm(to_array(x), norm_ord(ord).value_or(la::NormOrd(2)), axis_list(axis), keepdims);
  }, nb::arg("x"), nb::arg("ord") = 2, nb::arg("axis").none() = nb::none(), nb::arg("keepdims") = false);
  m.def("matrix_norm", [](nb::handle x, nb::handle ord, bool keepdims) {
    return la::matrix_norm(to_array(x), norm_ord(ord).value_or(la::NormOrd("fro")), keepdims);
  }, nb::arg("x"), nb::arg("ord") = "fro", nb::arg("keepdims") = false);
  m.def("norm", [](nb::handle x, nb::handle ord, nb::handle axis, bool keepdims) {
    return la::norm(to_array(x), norm_ord(ord), axis_list(axis), keepdims);
  }, nb::arg("x"), nb::arg("ord").none() = nb::none(), nb::arg("axis").none() = nb::none(),
     nb::arg("keepdims") = false);
  m.def("cross", [](nb::handle a, nb::handle b, int64_t axis) {
    auto [x, y] = to_arrays_like(a, b);
    return la::cross(x, y, axis);
  }, nb::arg("x1"), nb::arg("x2"), nb::arg("axis") = -1);
  m.def("multi_dot", [](nb::handle arrays) { return la::multi_dot(arrays_of(arrays)); }, nb::arg("arrays"));
  m.def("diagonal", [](nb::handle x, int64_t offset) { return la::diagonal(to_array(x), offset); }, nb::arg("x"),
        nb::arg("offset") = 0);
  def_arrays(m, "matrix_transpose", static_cast<Array (*)(const Array&)>(&la::matrix_transpose), nb::arg("x"));
  m.def("vecdot", [](nb::handle a, nb::handle b, int64_t axis) {
    auto [x, y] = to_arrays_like(a, b);
    return la::vecdot(x, y, axis);
  }, nb::arg("x1"), nb::arg("x2"), nb::arg("axis") = -1);
  def_arrays(m, "outer", static_cast<Array (*)(const Array&, const Array&)>(&la::outer), nb::arg("x1"),
             nb::arg("x2"));
  def_arrays(m, "matmul", static_cast<Array (*)(const Array&, const Array&)>(&tessel::matmul), nb::arg("x1"),
             nb::arg("x2"));
  m.def("tensordot", [](nb::handle a, nb::handle b, nb::handle axes) {
    auto [x, y] = to_arrays_like(a, b);
    if (PyLong_Check(axes.ptr())) return la::tensordot(x, y, nb::cast<int64_t>(axes));
    nb::sequence pair = nb::borrow<nb::sequence>(axes);
    return la::tensordot(x, y, *axis_list(pair[0]), *axis_list(pair[1]));
  }, nb::arg("x1"), nb::arg("x2"), nb::arg("axes") = 2);
  m.def("trace", [](nb::handle x, int64_t offset, nb::handle dtype) {
    return la::trace(to_array(x), offset, optional_dtype(dtype));
  }, nb::arg("x"), nb::arg("offset") = 0, nb::arg("dtype").none() = nb::none());
  m.def("matrix_power", [](nb::handle a, int64_t n) { return la::matrix_power(to_array(a), n); }, nb::arg("a"),
        nb::arg("n"));
  m.def("pinv", [](nb::handle a, nb::handle rtol, bool hermitian) {
    return la::pinv(to_array(a), optional_array(rtol), hermitian);
  }, nb::arg("a"), nb::arg("rtol").none() = nb::none(), nb::arg("hermitian") = false);
  m.def("matrix_rank", [](nb::handle a, nb::handle rtol, bool hermitian, nb::handle tol) {
    return la::matrix_rank(to_array(a), optional_array(rtol.is_none() ? tol : rtol), hermitian);
  }, nb::arg("M"), nb::arg("rtol").none() = nb::none(), nb::arg("hermitian") = false,
     nb::arg("tol").none() = nb::none());
  m.def("cond", [](nb::handle x, nb::handle p) { return la::cond(to_array(x), norm_ord(p)); }, nb::arg("x"),
        nb::arg("p").none() = nb::none());
  m.def("lstsq", [](nb::handle a, nb::handle b, std::optional<double> rcond) {
    auto [x, y] = to_arrays_like(a, b);
    la::LstsqResult r = la::lstsq(x, y, rcond);
    return nb::make_tuple(r.solution, r.residuals, r.rank, r.singular_values);
  }, nb::arg("a"), nb::arg("b"), nb::arg("rcond").none() = nb::none());
  m.def("tensorsolve", [](nb::handle a, nb::handle b, nb::handle axes) {
    auto [x, y] = to_arrays_like(a, b);
    return la::tensorsolve(x, y, axis_list(axes));
  }, nb::arg("a"), nb::arg("b"), nb::arg("axes").none() = nb::none());
  m.def("tensorinv", [](nb::handle a, int64_t ind) { return la::tensorinv(to_array(a), ind); }, nb::arg("a"),
        nb::arg("ind") = 2);
}

void bind_scipy_linalg(nb::module_& m) {
  m.def("solve_triangular", [](nb::handle a, nb::handle b, nb::handle trans, bool lower, bool unit_diagonal) {
    auto [x, y] = to_arrays_like(a, b);
    return sla::solve_triangular(x, y, trans_code(trans, "solve_triangular"), lower, unit_diagonal);
  }, nb::arg("a"), nb::arg("b"), nb::arg("trans") = 0, nb::arg("lower") = false, nb::arg("unit_diagonal") = false);
  m.def("cho_factor", [](nb::handle a, bool lower) {
    sla::ChoFactor c = sla::cho_factor(to_array(a), lower);
    return nb::make_tuple(c.c, c.lower);
  }, nb::arg("a"), nb::arg("lower") = false);
  m.def("cho_solve", [](nb::handle c_and_lower, nb::handle b) {
    nb::sequence cl = nb::borrow<nb::sequence>(c_and_lower);
    return sla::cho_solve(sla::ChoFactor{to_array(cl[0]), nb::cast<bool>(cl[1])}, to_array(b));
  }, nb::arg("c_and_lower"), nb::arg("b"));
  m.def("lu", [](nb::handle a) {
    sla::PluResult r = sla::lu(to_array(a));
    return nb::make_tuple(r.p, r.l, r.u);
  }, nb::arg("a"));
  m.def("lu_factor", [](nb::handle a) {
    sla::LuFactor r = sla::lu_factor(to_array(a));
    return nb::make_tuple(r.lu, r.piv);
  }, nb::arg("a"));
  m.def("lu_solve", [](nb::handle lu_and_piv, nb::handle b, nb::handle trans) {
    nb::sequence lp = nb::borrow<nb::sequence>(lu_and_piv);
    return sla::lu_solve(sla::LuFactor{to_array(lp[0]), to_array(lp[1])}, to_array(b), trans_code(trans, "lu_solve"));
  }, nb::arg("lu_and_piv"), nb::arg("b"), nb::arg("trans") = 0);
  m.def("qr", [](nb::handle a, const std::string& mode) -> nb::object {
    la::QrResult r = sla::qr(to_array(a), mode);
    if (mode == "r") return nb::make_tuple(r.r);  // scipy returns a 1-tuple for mode "r"
    return nb::make_tuple(r.q, r.r);
  }, nb::arg("a"), nb::arg("mode") = "full");
  m.def("svd", [](nb::handle a, bool full_matrices, bool compute_uv) {
    return svd_result(sla::svd(to_array(a), full_matrices, compute_uv), compute_uv);
  }, nb::arg("a"), nb::arg("full_matrices") = true, nb::arg("compute_uv") = true);
  m.def("block_diag", [](nb::args arrays) { return sla::block_diag(arrays_of(arrays)); });
  m.def("toeplitz", [](nb::handle c, nb::handle r) { return sla::toeplitz(to_array(c), optional_array(r)); },
        nb::arg("c"), nb::arg("r").none() = nb::none());
  m.def("hankel", [](nb::handle c, nb::handle r) { return sla::hankel(to_array(c), optional_array(r)); },
        nb::arg("c"), nb::arg("r").none() = nb::none());
  def_arrays(m, "circulant", &sla::circulant, nb::arg("c"));
  m.def("expm", [](nb::handle a, bool upper_triangular, int64_t max_squarings) {
    return sla::expm(to_array(a), upper_triangular, max_squarings);
  }, nb::arg("A"), nb::arg("upper_triangular") = false, nb::arg("max_squarings") = 16);
  m.def("schur", [](nb::handle a, const std::string& output) {
    lax::linalg::SchurResult r = sla::schur(to_array(a), output);
    return nb::make_tuple(r.t, r.z);
  }, nb::arg("a"), nb::arg("output") = "real");
  def_arrays(m, "sqrtm", &sla::sqrtm, nb::arg("A"));
  m.def("eigh_tridiagonal", [](nb::handle d, nb::handle e, bool eigvals_only, const std::string& select,
                               nb::handle select_range) -> nb::object {
    std::pair<int64_t, int64_t> range{0, 0};
    if (!select_range.is_none()) {
      nb::sequence r = nb::borrow<nb::sequence>(select_range);
      range = {nb::cast<int64_t>(r[0]), nb::cast<int64_t>(r[1])};
    }
    auto [dd, ee] = to_arrays_like(d, e);
    sla::EighTridiagonalResult r = sla::eigh_tridiagonal(dd, ee, eigvals_only, select, range);
    if (eigvals_only) return nb::cast(r.eigenvalues);
    return nb::make_tuple(r.eigenvalues, r.eigenvectors);
  }, nb::arg("d"), nb::arg("e"), nb::arg("eigvals_only") = false, nb::arg("select") = "a",
     nb::arg("select_range").none() = nb::none());
  m.def("polar", [](nb::handle a, const std::string& side, const std::string& method) {
    sla::PolarResult r = sla::polar(to_array(a), side, method);
    return nb::make_tuple(r.unitary, r.posdef);
  }, nb::arg("a"), nb::arg("side") = "right", nb::arg("method") = "qdwh");
}

}  // namespace

void bind_linalg(nb::module_& m) {
  nb::module_ np = m.def_submodule("numpy_linalg_functions", "C++ functions behind tessel.numpy.linalg");
  bind_numpy_linalg(np);
  nb::module_ sp = m.def_submodule("scipy_linalg_functions", "C++ functions behind tessel.scipy.linalg");
  bind_scipy_linalg(sp);
}

}  // namespace tessel::python
