// Bytes from another process that are not what the writer wrote (what the fuzz harness
// tests/fuzz/fuzz_readers.cpp throws at the readers by the million): each class of damage
// it found gets a tessel::Error that names what is wrong, never a crash. The harness itself
// runs as the `fuzz_readers` CTest entry.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "distributed/controller.h"
#include "ir/serialize.h"
#include "ir/sharding_rule.h"
#include "pipeline/instructions.h"
#include "tessel/tessel.h"
#include "value_error.h"

namespace ts = tessel;
namespace ir = tessel::ir;
namespace ppd = tessel::pipeline::detail;
namespace ctl = tessel::distributed::controller;

namespace {

using tessel_test::value_error_of;

/// `{ lambda ; a:f32[3]. let b = <prim>[params](<operands of a>) in (b,) }`, assembled by
/// hand (not traced), so it may be anything bytes can say.
ir::Program one_equation(const std::string& prim, size_t operands, ir::Params params = {}) {
  ir::Program p;
  p.name = "hand_made";
  p.invars.push_back(ir::new_var(ts::Aval({3}, ts::f32)));
  ir::Var out = ir::new_var(ts::Aval({3}, ts::f32));
  p.eqns.push_back(ir::Equation{&ir::lookup_primitive(prim), std::vector<ir::Atom>(operands, ir::Atom(p.invars[0])),
                                {out}, std::move(params)});
  p.outvars.push_back(ir::Atom(out));
  return p;
}

TEST(BadBytes, VerifierErrorsPrintProgramsWithNullParts) {
  // The verifier prints the program it rejects; a null nested program used to be followed.
  ir::Program p = one_equation("cond", 1, ir::Params{{"branches", std::vector<ir::ProgramRef>{nullptr}}});
  std::string err;
  try {
    ir::verify_program(p);
  } catch (const ts::Error& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("parameter 'branches' holds a null program at position 0"), std::string::npos) << err;
  EXPECT_NE(err.find("<no program>"), std::string::npos) << err;
  ir::Program q = p;
  q.eqns[0].outputs[0] = nullptr;
  q.eqns[0].prim = nullptr;
  EXPECT_NE(ir::print_program(q).find("<no variable> = <no primitive>"), std::string::npos) << ir::print_program(q);
}

TEST(BadBytes, ProgramsSharingBodiesAtEveryLevelPrintInBoundedTime) {
  // Level k calls level k - 1 twice: 2^60 copies of the innermost body if printed in full.
  auto level = std::make_shared<const ir::Program>(one_equation("sin", 1));
  for (int k = 0; k < 60; ++k) {
    ir::Program p;
    p.name = "level" + std::to_string(k);
    p.invars.push_back(ir::new_var(ts::Aval({3}, ts::f32)));
    ir::Atom x(p.invars[0]);
    for (int call = 0; call < 2; ++call) {
      ir::Var out = ir::new_var(ts::Aval({3}, ts::f32));
      p.eqns.push_back(ir::Equation{&ir::lookup_primitive("jit"), {x}, {out}, ir::Params{{"program", level}}});
      x = ir::Atom(out);
    }
    p.outvars.push_back(x);
    level = std::make_shared<const ir::Program>(p);
  }
  const std::string text = ir::print_program(*level);
  EXPECT_LT(text.size(), size_t(64) << 20);
  EXPECT_NE(text.find("not printed: the text passed 16 MiB"), std::string::npos);
  ir::verify_program(*level);  // and it is a valid program
}

TEST(BadBytes, NullNestedProgramInBytes) {
  ir::Program p = one_equation("cond", 1, ir::Params{{"branches", std::vector<ir::ProgramRef>{nullptr}}});
  std::string err = value_error_of([&] { ir::deserialize(ir::serialize(p)); });
  EXPECT_NE(err.find("deserialize: a parameter holds a null program"), std::string::npos) << err;
}

TEST(BadBytes, EveryPrimitiveChecksItsOperandCount) {
  for (const auto& [prim, n] : std::vector<std::pair<std::string, size_t>>{{"sin", 0}, {"add", 1}, {"add", 3}, {"reshape", 0}}) {
    std::string err = value_error_of([&] { ir::deserialize(ir::serialize(one_equation(prim, n))); });
    EXPECT_NE(err.find(prim + ": takes "), std::string::npos) << err;
    EXPECT_NE(err.find("operands, got " + std::to_string(n)), std::string::npos) << err;
  }
  std::string err = value_error_of([&] { ir::deserialize(ir::serialize(one_equation("cond", 0, ir::Params{{"branches", std::vector<ir::ProgramRef>{}}}))); });
  EXPECT_NE(err.find("cond: takes at least 1 operands, got 0"), std::string::npos) << err;
}

TEST(BadBytes, ParameterObjectOfAnotherKind) {
  // A mesh where sharding_constraint expects a sharding (both travel; the reader of the
  // value cannot know where it is used).
  auto mesh = std::shared_ptr<const ir::ParamObject>(std::make_shared<ir::MeshParam>(ts::make_mesh({1}, {"x"})));
  for (auto value : {mesh, std::shared_ptr<const ir::ParamObject>()}) {
    ir::Program p = one_equation("sharding_constraint", 1, ir::Params{{"sharding", value}});
    std::string err = value_error_of([&] { ir::deserialize(ir::serialize(p)); });
    EXPECT_NE(err.find("parameter 'sharding' is missing, null or not the kind of value its primitive uses"),
              std::string::npos)
        << err;
  }
}

TEST(BadBytes, ControlFlowCountsBeyondTheOperands) {
  ir::Program body;
  body.invars.push_back(ir::new_var(ts::Aval({}, ts::f32)));
  body.outvars.push_back(ir::Atom(body.invars[0]));
  auto b = std::make_shared<const ir::Program>(body);
  ir::Program scan = one_equation("scan", 1, ir::Params{{"program", b}, {"num_consts", int64_t(1000)}, {"num_carry", int64_t(0)},
                                                        {"length", int64_t(3)}, {"reverse", false}});
  std::string err = value_error_of([&] { ir::deserialize(ir::serialize(scan)); });
  EXPECT_NE(err.find("scan: num_consts=1000"), std::string::npos) << err;
  ir::Program loop = one_equation("while", 1, ir::Params{{"cond", b}, {"body", b}, {"cond_nconsts", int64_t(-1)},
                                                         {"body_nconsts", int64_t(0)}});
  err = value_error_of([&] { ir::deserialize(ir::serialize(loop)); });
  EXPECT_NE(err.find("while_loop: cond_nconsts=-1"), std::string::npos) << err;
}

TEST(BadBytes, DriverMessageHeaders) {
  std::string good = ctl::write_message({"array.fetch", 16, {7, 8}}, "payload");
  ir::Reader r(good, "worker message");
  ctl::MessageHeader h = ctl::read_message_header(r);
  EXPECT_EQ(h.kind, "array.fetch");
  EXPECT_EQ(h.reply_tag, 16);
  EXPECT_EQ(h.deletes, (std::vector<uint64_t>{7, 8}));
  EXPECT_EQ(r.raw(r.remaining()), "payload");
  for (int tag : {5, -1}) {  // below the reply tags, and 2^32 - 1
    std::string bad = ctl::write_message({"stats", tag, {}}, "");
    std::string err = value_error_of([&] {
      ir::Reader rb(bad, "worker message");
      ctl::read_message_header(rb);
    });
    EXPECT_NE(err.find("worker message: reply tag"), std::string::npos) << err;
  }
  std::string err = value_error_of([&] {
    ir::Reader rt(std::string_view(good).substr(0, 20), "worker message");
    ctl::read_message_header(rt);
  });
  EXPECT_NE(err.find("truncated input"), std::string::npos) << err;
}

// The inline reads (every controller message makes a dozen) keep their checks: each kind
// of read past the end, and a count larger than the bytes left, names the reader (a
// literal, kept as a pointer, or a string made at run time), the item and the offset.
TEST(BadBytes, InlineReadsNameTheReaderTheItemAndTheOffset) {
  ir::Writer w;
  w.u32(7);
  w.u64(uint64_t(1) << 40);
  w.count(3);
  const std::string bytes = w.bytes();
  ir::Reader ok(bytes, "wire test");
  EXPECT_EQ(ok.u32(), 7u);
  EXPECT_EQ(ok.u64(), uint64_t(1) << 40);
  EXPECT_EQ(ok.what(), "wire test");
  struct Case {
    std::function<void(ir::Reader&)> read;
    std::string want;
  };
  const std::vector<Case> cases = {
      {[](ir::Reader& r) { r.u64(), r.u64(), r.u64(); }, "a 64-bit integer needs 8 bytes, 4 left"},
      {[](ir::Reader& r) { r.u64(), r.u64(), r.u32(), r.u32(); }, "a 32-bit integer needs 4 bytes, 0 left"},
      {[](ir::Reader& r) { r.raw(21); }, "a byte string needs 21 bytes, 20 left"},
      {[](ir::Reader& r) { r.u32(), r.u64(), r.count(8); }, "a count of 3 items needs more than the 0 bytes left"},
      {[](ir::Reader& r) { r.u64(), r.u64(), r.u32(), r.u8(); }, "a byte needs 1 bytes, 0 left"},
  };
  const std::string runtime_name = std::string("wire ") + "message " + std::to_string(42);
  for (const Case& c : cases) {
    std::string err = value_error_of([&] {
      ir::Reader r(bytes, "wire test");
      c.read(r);
    });
    EXPECT_EQ(err.rfind("wire test: truncated input: ", 0), 0u) << err;
    EXPECT_NE(err.find(c.want), std::string::npos) << err;
    EXPECT_NE(err.find("of 20)"), std::string::npos) << err;
    err = value_error_of([&] {
      ir::Reader r(bytes, runtime_name);
      c.read(r);
    });
    EXPECT_EQ(err.rfind("wire message 42: truncated input: ", 0), 0u) << err;
  }
}

TEST(BadBytes, PipelineInstructionsNeedTheirSlotsAndKnownEnums) {
  auto read_back = [](const ppd::Instruction& in) {
    ir::Writer w;
    ppd::write_stream(w, {in});
    ir::Reader r(w.bytes(), "pipeline.load");
    return ppd::read_stream(r);
  };
  ppd::Instruction send;
  send.op = ppd::Op::send;
  send.peer = 1;
  send.ins = {4};
  EXPECT_EQ(read_back(send).size(), 1u);
  send.ins.clear();  // a send of nothing: the worker would read slot ins[0]
  EXPECT_NE(value_error_of([&] { read_back(send); }).find("reads 0 and writes 0 slots; it needs 1 and 0"),
            std::string::npos);
  ppd::Instruction acc;
  acc.op = ppd::Op::accumulate;
  acc.mode = ppd::AccumulateMode::add;  // adds into outs[0]: reads two slots
  acc.ins = {1};
  acc.outs = {2};
  EXPECT_NE(value_error_of([&] { read_back(acc); }).find("it needs 2 and 1"), std::string::npos);
  acc.mode = ppd::AccumulateMode(9);
  EXPECT_NE(value_error_of([&] { read_back(acc); }).find("unknown accumulate mode 9"), std::string::npos);
  ppd::Instruction recv;
  recv.op = ppd::Op::recv;
  recv.outs = {3};
  recv.peer = -1;
  EXPECT_NE(value_error_of([&] { read_back(recv); }).find("transfer without a peer"), std::string::npos);
  recv.peer = 0;
  recv.tag = -4;
  EXPECT_NE(value_error_of([&] { read_back(recv); }).find("field 'tag' is -4"), std::string::npos);
  ppd::Instruction all;  // an AllReduce needs its workers and one result slot
  all.op = ppd::Op::all_reduce;
  all.ins = {1};
  all.outs = {2};
  all.group = {0, 1};
  all.across_replicas = true;
  ASSERT_EQ(read_back(all).size(), 1u);
  EXPECT_TRUE(read_back(all)[0].across_replicas);
  all.group.clear();
  EXPECT_NE(value_error_of([&] { read_back(all); }).find("all_reduce without workers"), std::string::npos);
  all.group = {0};
  all.outs.clear();
  EXPECT_NE(value_error_of([&] { read_back(all); }).find("it needs 0 and 1"), std::string::npos);
}

}  // namespace
