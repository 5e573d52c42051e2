#pragma once
// The compiled kernel of a `fused` equation (fusion.cpp) as a parameter object, shared with
// the streaming pass (streaming.cpp), which runs several of them over bands of rows.
#include <cstdint>
#include <memory>
#include <string>

#include "compiler/codegen.h"
#include "compiler/kernel_cache.h"
#include "ir/params.h"
#include "ir/program.h"

namespace tessel::compiler {

/// A generated loop nest: computes rows [r0, r1) of its domain's first dimension
/// (codegen.h's generate_kernel); `bufs` holds its inputs, then its outputs.
using KernelFnPtr = void (*)(void* const* bufs, int64_t r0, int64_t r1);

/// A loaded kernel (its library stays loaded while it lives), the `kernel` parameter of a
/// `fused` equation.
class FusedKernel final : public ir::ParamObject {
 public:
  FusedKernel(std::shared_ptr<KernelLibrary> lib, std::string name, GroupShape shape);
  size_t hash() const override;
  bool equals(const ir::ParamObject& o) const override;
  std::string to_string() const override { return name_; }
  /// Throws ValueError: machine code does not travel to another process.
  void write(ir::Writer&) const override;
  KernelFnPtr fn() const { return fn_; }
  const GroupShape& shape() const { return shape_; }

 private:
  std::shared_ptr<KernelLibrary> lib_;
  KernelFnPtr fn_;
  std::string name_;
  GroupShape shape_;
};

/// Whether `e` is a `fused` equation (one generated loop nest).
bool is_fused(const ir::Equation& e);

}  // namespace tessel::compiler
