// Package.cpp - writing and reading .npub packages (format described in Package.h).
//
// The reader is defensive by design: a package is a file the user hands us, so every size,
// offset, id and address in it is checked before use, and the embedded target and programs are
// re-validated by the isa library (parseTarget, decode). Errors always start with the file name.
#include "tools/driver/Package.h"
#include "support/Hash.h"

#include "isa/Program.h"
#include "support/Error.h"
#include "support/Npy.h"
#include "tools/driver/PackageCodec.h"
#include "tools/driver/Report.h"

#include "npuc/thread_pool.h"

#include <llvm/Support/xxhash.h>

#include <cstring>
#include <optional>

namespace npuc::driver {

using detail::BlobWriter;
using detail::json;
using detail::JsonIn;

namespace {

constexpr char kMagic[4] = {'N', 'P', 'U', 'B'};
constexpr size_t kPreamble = 16; // magic + version + header length

json dramTensorToJson(const npu::DramTensor &t) {
  return {{"value", t.value},
          {"name", t.name},
          {"addr", t.addr},
          {"shape", t.shape},
          {"layout", t.layout.name()},
          {"dtype", isa::elemTypeName(t.dtype)},
          {"scale", t.scale}};
}

npu::DramTensor dramTensorFromJson(const JsonIn &j, const graph::Graph &g, int64_t dramBytes) {
  npu::DramTensor t;
  t.value = int(j["value"].asIntIn(0, int64_t(g.values.size()) - 1));
  t.name = j["name"].asString();
  t.shape = j["shape"].asShape();
  t.addr = j["addr"].asIntIn(0, dramBytes);
  std::string layout = j["layout"].asString();
  std::optional<npu::DramLayout> l = npu::DramLayout::parse(layout);
  if (!l || (!l->order.empty() && l->order.size() != t.shape.size()))
    j["layout"].bad("expected \"nhwc\", \"row_major\" or a permutation of the tensor's dims "
                    "(\"0,2,1\"), got '" +
                    layout + "'");
  t.layout = *l;
  // int8 segments (quantised targets) carry each tensor's scale: the runtime quantises inputs
  // and dequantises outputs with it.
  std::string dtype = j["dtype"].asString();
  if (dtype == "fp16")
    t.dtype = isa::ElemType::F16;
  else if (dtype == "int8")
    t.dtype = isa::ElemType::I8;
  else
    j["dtype"].bad("expected \"fp16\" or \"int8\", got '" + dtype + "'");
  t.scale = static_cast<float>(j["scale"].asDouble());
  if (!(t.scale > 0) || !std::isfinite(t.scale))
    j["scale"].bad(fmt::format("a scale must be positive and finite, got {}", t.scale));
  if (t.shape != g.value(t.value).shape)
    j["shape"].bad(fmt::format("{} differs from value '{}' ({})", shapeToString(t.shape),
                               g.value(t.value).name, shapeToString(g.value(t.value).shape)));
  if (t.bytes() > dramBytes - t.addr)
    j.bad(fmt::format("tensor [{}, +{}) exceeds the segment's {} DRAM bytes", t.addr, t.bytes(),
                      dramBytes));
  return t;
}

npu::BankReport bankReportFromJson(const JsonIn &j) {
  npu::BankReport b;
  b.ran = j["ran"].asBool();
  b.stallsBefore = j["stall_cycles_before"].asIntIn(0, INT64_MAX);
  b.stallsAfter = j["stall_cycles_after"].asIntIn(0, INT64_MAX);
  b.cyclesBefore = j["cycles_before"].asIntIn(0, INT64_MAX);
  b.cyclesAfter = j["cycles_after"].asIntIn(0, INT64_MAX);
  b.candidates = int(j["candidates"].asIntIn(0, 1 << 20));
  b.change = j["change"].asString();
  return b;
}

json segmentToJson(const isa::Target &target, const npu::Segment &s, BlobWriter &blobs) {
  json inputs = json::array(), outputs = json::array(), infos = json::array();
  for (const npu::DramTensor &t : s.inputs)
    inputs.push_back(dramTensorToJson(t));
  for (const npu::DramTensor &t : s.outputs)
    outputs.push_back(dramTensorToJson(t));
  for (const npu::GroupInfo &gi : s.groupInfo)
    infos.push_back({{"group_id", gi.groupId},
                     {"name", gi.name},
                     {"ops", gi.ops},
                     {"tiling", gi.tiling},
                     {"tir", gi.tir},
                     {"instr_begin", gi.instrBegin},
                     {"instr_end", gi.instrEnd},
                     {"instr_counts", gi.instrCounts},
                     {"macs", gi.macs},
                     {"roofline_cycles", gi.rooflineCycles},
                     {"bound", gi.bound},
                     {"on_chip_bytes", gi.onChipBytes},
                     {"bank_placement", bankReportToJson(gi.bank)},
                     {"sub_batch", gi.subBatch},
                     {"band", gi.band},
                     {"layout", gi.layout},
                     {"layout_ops_cancelled", gi.layoutOpsCancelled},
                     {"layout_bytes_not_moved", gi.layoutBytesNotMoved}});
  json residency = json::array();
  for (const npu::ResidencyEntry &e : s.residency)
    residency.push_back({{"name", e.name},
                         {"bytes", e.bytes},
                         {"producer", e.producer},
                         {"consumers", e.consumers},
                         {"l1_addr", e.l1Addr},
                         {"dram_bytes_saved", e.dramBytesSaved},
                         {"dropped", e.dropped}});
  std::vector<uint8_t> code = isa::encode(target, s.program);
  return {{"groups", s.groups},
          {"program", blobs.addVector(code)},
          {"instructions", s.program.instrs.size()},
          {"dram_bytes", s.dramBytes},
          {"activation_bytes", s.activationBytes},
          {"activation_bytes_no_reuse", s.activationBytesNoReuse},
          {"const_base", s.constBase},
          {"const_image", blobs.addVector(s.constImage)},
          {"inputs", inputs},
          {"outputs", outputs},
          {"group_info", infos},
          {"residency", residency},
          {"batch_split", batchSplitToJson(s)},
          {"batch_split_notes", s.batchSplitNotes},
          {"depth_first", depthFirstToJson(s)},
          {"depth_first_notes", s.depthFirstNotes}};
}

npu::Segment segmentFromJson(const JsonIn &j, const CompiledModel &m, const std::string &origin) {
  npu::Segment s;
  const int64_t ng = int64_t(m.graph.groups.size());
  JsonIn groups = j["groups"];
  for (size_t i = 0; i < groups.size(); ++i)
    s.groups.push_back(int(groups.at(i).asIntIn(0, ng - 1)));
  std::string code = j["program"].blob();
  try {
    s.program = isa::decode(m.target, std::vector<uint8_t>(code.begin(), code.end()));
  } catch (const Error &e) {
    fail("{}: corrupt npuc package: {}: {}", origin, j.path(), e.what());
  }
  int64_t n = j["instructions"].asInt();
  if (n != int64_t(s.program.instrs.size()))
    j["instructions"].bad(
        fmt::format("says {} instructions, the program decodes to {}", n, s.program.instrs.size()));
  s.dramBytes = j["dram_bytes"].asIntIn(0, int64_t(1) << 40);
  s.activationBytes = j["activation_bytes"].asIntIn(0, s.dramBytes);
  s.activationBytesNoReuse = j["activation_bytes_no_reuse"].asIntIn(0, int64_t(1) << 40);
  s.constBase = j["const_base"].asIntIn(0, s.dramBytes);
  std::string image = j["const_image"].blob();
  if (int64_t(image.size()) > s.dramBytes - s.constBase)
    j["const_image"].bad("extends past the segment's DRAM image");
  s.constImage.assign(image.begin(), image.end());
  JsonIn ins = j["inputs"], outs = j["outputs"], infos = j["group_info"];
  for (size_t i = 0; i < ins.size(); ++i)
    s.inputs.push_back(dramTensorFromJson(ins.at(i), m.graph, s.dramBytes));
  for (size_t i = 0; i < outs.size(); ++i)
    s.outputs.push_back(dramTensorFromJson(outs.at(i), m.graph, s.dramBytes));
  for (size_t i = 0; i < infos.size(); ++i) {
    JsonIn ji = infos.at(i);
    npu::GroupInfo gi;
    gi.groupId = int(ji["group_id"].asIntIn(0, ng - 1));
    gi.name = ji["name"].asString();
    gi.ops = ji["ops"].asStrings();
    gi.tiling = ji["tiling"].asString();
    gi.tir = ji["tir"].asString();
    gi.instrBegin = ji["instr_begin"].asIntIn(0, n);
    gi.instrEnd = ji["instr_end"].asIntIn(gi.instrBegin, n);
    JsonIn counts = ji["instr_counts"];
    if (!counts.raw().is_object())
      counts.bad("expected an object");
    for (const auto &[k, v] : counts.raw().items())
      gi.instrCounts[k] = counts[k.c_str()].asIntIn(0, n);
    gi.macs = ji["macs"].asIntIn(0, INT64_MAX);
    gi.rooflineCycles = ji["roofline_cycles"].asIntIn(0, INT64_MAX);
    gi.bound = ji["bound"].asString();
    JsonIn onChip = ji["on_chip_bytes"];
    if (!onChip.raw().is_object())
      onChip.bad("expected an object");
    for (const auto &[level, v] : onChip.raw().items()) {
      std::optional<int> li = m.target.findLevel(level);
      if (!li)
        onChip.bad("names no memory level of target '" + m.target.name + "': " + level);
      gi.onChipBytes[level] =
          onChip[level.c_str()].asIntIn(0, m.target.levels.at(size_t(*li)).size);
    }
    gi.bank = bankReportFromJson(ji["bank_placement"]);
    gi.subBatch = ji.has("sub_batch") ? ji["sub_batch"].asIntIn(-1, INT64_MAX) : -1;
    gi.band = ji.has("band") ? ji["band"].asIntIn(-1, INT64_MAX) : -1;
    gi.layout = ji["layout"].asString();
    gi.layoutOpsCancelled =
        int(ji["layout_ops_cancelled"].asIntIn(0, int64_t(m.graph.nodes.size())));
    gi.layoutBytesNotMoved = ji["layout_bytes_not_moved"].asIntIn(0, INT64_MAX);
    s.groupInfo.push_back(std::move(gi));
  }
  JsonIn res = j["residency"];
  for (size_t i = 0; i < res.size(); ++i) {
    JsonIn je = res.at(i);
    npu::ResidencyEntry e;
    e.name = je["name"].asString();
    e.bytes = je["bytes"].asIntIn(0, INT64_MAX);
    e.producer = int(je["producer"].asIntIn(0, ng - 1));
    JsonIn cs = je["consumers"];
    for (size_t k = 0; k < cs.size(); ++k)
      e.consumers.push_back(int(cs.at(k).asIntIn(0, ng - 1)));
    e.l1Addr = je["l1_addr"].asIntIn(-1, INT64_MAX);
    e.dramBytesSaved = je["dram_bytes_saved"].asIntIn(0, INT64_MAX);
    e.dropped = je["dropped"].asString();
    s.residency.push_back(std::move(e));
  }
  for (size_t i = 0; j.has("batch_split") && i < j["batch_split"].size(); ++i) {
    JsonIn split = j["batch_split"];
    JsonIn je = split.at(i);
    npu::BatchSplitEntry e;
    for (int64_t gid : je["groups"].asInts())
      e.groups.push_back(int(gid));
    e.batch = je["batch"].asIntIn(1, INT64_MAX);
    e.subBatch = je["sub_batch"].asIntIn(1, e.batch);
    e.dramBytesSaved = je["dram_bytes_saved"].asIntIn(0, INT64_MAX);
    e.extraDramBytes = je["extra_dram_bytes"].asIntIn(INT64_MIN, INT64_MAX);
    e.reason = je["reason"].asString();
    s.batchSplit.push_back(std::move(e));
  }
  if (j.has("batch_split_notes"))
    s.batchSplitNotes = j["batch_split_notes"].asStrings();
  for (size_t i = 0; j.has("depth_first") && i < j["depth_first"].size(); ++i) {
    JsonIn je = j["depth_first"].at(i);
    npu::DepthFirstEntry e;
    for (int64_t gid : je["groups"].asInts())
      e.groups.push_back(int(gid));
    e.rows = je["rows"].asIntIn(1, INT64_MAX);
    e.bandRows = je["band_rows"].asIntIn(1, e.rows);
    e.bands = je["bands"].asIntIn(1, e.rows);
    e.images = je.has("images") ? je["images"].asIntIn(1, INT64_MAX) : 1;
    e.recomputedRows = je["recomputed_rows"].asIntIn(0, INT64_MAX);
    // The work the recomputed rows cost: negative when smaller kernels happen to do less.
    e.recomputedMacs =
        je.has("recomputed_macs") ? je["recomputed_macs"].asIntIn(INT64_MIN, INT64_MAX) : 0;
    e.recomputedVectorElements =
        je.has("recomputed_vector_elements")
            ? je["recomputed_vector_elements"].asIntIn(INT64_MIN, INT64_MAX)
            : 0;
    e.wholeDramBytes = je["whole_dram_bytes"].asIntIn(INT64_MIN, INT64_MAX);
    e.bandDramBytes = je["band_dram_bytes"].asIntIn(0, INT64_MAX);
    e.wholeCycles = je["whole_cycles"].asIntIn(0, INT64_MAX);
    e.bandCycles = je["band_cycles"].asIntIn(0, INT64_MAX);
    e.reason = je["reason"].asString();
    s.depthFirst.push_back(std::move(e));
  }
  if (j.has("depth_first_notes"))
    s.depthFirstNotes = j["depth_first_notes"].asStrings();
  return s;
}

} // namespace

bool hasPackageMagic(std::string_view bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), kMagic, 4) == 0;
}

std::string packageBytes(const CompiledModel &m) {
  for (const npu::Segment &s : m.npuSegments)
    NPUC_ASSERT(!s.timingOnly, "a timing-only compile (constants not packed) is never packaged");
  BlobWriter blobs;
  // The large blobs, counted ahead: the graph's constants (an upper bound: graphToJson leaves
  // out the ones nothing reads; reserved pages nothing writes are never touched), the NPU
  // programs and constant images, the CPU code. An underestimate only costs a regrowth.
  size_t expect = m.cpuCode ? m.cpuCode->object.size() : 0;
  for (const graph::Value &v : m.graph.values)
    expect +=
        (v.f32 ? v.f32->size() * sizeof(float) : 0) + (v.i64 ? v.i64->size() * sizeof(int64_t) : 0);
  for (const npu::Segment &s : m.npuSegments)
    expect += s.constImage.size() + s.program.instrs.size() * size_t(m.target.instructionBytes());
  blobs.reserve(expect);
  json segs = json::array(), npuSegs = json::array();
  for (const Seg &s : m.segments)
    segs.push_back({{"npu", s.npu}, {"groups", s.groups}, {"npu_index", s.npuIndex}});
  for (const npu::Segment &s : m.npuSegments)
    npuSegs.push_back(segmentToJson(m.target, s, blobs));
  json header = {{"format", "npuc-package"},
                 {"target", {{"name", m.target.name}, {"source_text", m.target.sourceText}}},
                 {"options",
                  {{"double_buffer", m.options.doubleBuffer},
                   {"naive_tiling", m.options.naiveTiling},
                   {"cross_group_prefetch", m.options.crossGroupPrefetch},
                   {"bank_aware", m.options.bankAware},
                   {"residency", m.options.residency},
                   {"batch_split", m.options.batchSplit},
                   {"batch_split_even_if_slower", m.options.batchSplitEvenIfSlower},
                   {"batch_weight_reuse", m.options.batchWeightReuse},
                   {"depth_first", m.options.depthFirst},
                   {"fused_attention", m.options.fusedAttention},
                   {"depth_first_rows", m.options.depthFirstRows},
                   {"segment_per_group", m.options.segmentPerGroup},
                   {"calibration", m.options.quant ? m.options.quant->source : ""},
                   {"int8_accuracy", m.options.int8AccuracyResult}}},
                 {"cpu_only", m.cpuOnly},
                 {"threads", m.threads},
                 {"graph", detail::graphToJson(m.graph, blobs)},
                 {"segments", segs},
                 {"npu_segments", npuSegs}};
  if (m.cpuCode)
    header["cpu_code"] = {
        {"key", m.cpuCode->key},
        {"host", m.cpuCode->host},
        {"object", blobs.add(m.cpuCode->object.data(), m.cpuCode->object.size())}};
  // The blob area's size and checksum go last, once every blob has been added.
  header["blob_bytes"] = blobs.bytes().size();
  header["blob_xxh64"] = fmt::format("{:016x}", llvm::xxHash64(blobs.bytes()));
  std::string text = header.dump();
  std::string out(kMagic, 4);
  out.reserve(4 + 4 + 8 + text.size() + blobs.bytes().size());
  uint32_t version = kPackageVersion;
  uint64_t len = text.size();
  out.append(reinterpret_cast<const char *>(&version), 4);
  out.append(reinterpret_cast<const char *>(&len), 8);
  out += text;
  out += blobs.bytes();
  return out;
}

CompiledModel parsePackage(std::string_view bytes, const std::string &origin) {
  if (bytes.size() < kPreamble || std::memcmp(bytes.data(), kMagic, 4) != 0)
    fail("{}: not an npuc package (missing the 'NPUB' magic{})", origin,
         bytes.size() < kPreamble ? fmt::format("; the file has only {} bytes", bytes.size())
                                  : std::string());
  uint32_t version = 0;
  uint64_t len = 0;
  std::memcpy(&version, bytes.data() + 4, 4);
  std::memcpy(&len, bytes.data() + 8, 8);
  if (version < kOldestPackageVersion || version > kPackageVersion)
    fail("{}: not an npuc package (format version {}, this npuc reads versions {} to {})", origin,
         version, kOldestPackageVersion, kPackageVersion);
  if (len > bytes.size() - kPreamble)
    fail("{}: not an npuc package (truncated: the header needs {} bytes, {} remain)", origin, len,
         bytes.size() - kPreamble);
  json header = json::parse(bytes.begin() + kPreamble, bytes.begin() + long(kPreamble + len),
                            nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    fail("{}: corrupt npuc package: the JSON header does not parse", origin);
  std::string_view blobArea = bytes.substr(kPreamble + len);
  JsonIn root(header, origin, "", blobArea);
  if (root["format"].asString() != "npuc-package")
    fail("{}: not an npuc package (header format is '{}')", origin, root["format"].asString());
  int64_t blobBytes = root["blob_bytes"].asIntIn(0, INT64_MAX);
  if (uint64_t(blobBytes) != blobArea.size())
    fail("{}: not an npuc package (truncated or padded: {} blob bytes expected, {} present)",
         origin, blobBytes, blobArea.size());
  // Version 3 summed the blob area with FNV-1a, a byte at a time: 0.1-0.3 s on ResNet-50's
  // package, so version 4 uses xxHash64.
  const bool xxh = version >= 4;
  const uint64_t sum =
      xxh ? llvm::xxHash64(llvm::StringRef(blobArea.data(), blobArea.size())) : fnv1a(blobArea);
  if (root[xxh ? "blob_xxh64" : "blob_fnv1a"].asString() != fmt::format("{:016x}", sum))
    fail("{}: corrupt npuc package: blob checksum mismatch", origin);

  CompiledModel m;
  // Packages from before --target cpu have neither key: NPU target, one thread.
  m.cpuOnly = root.has("cpu_only") && root["cpu_only"].asBool();
  m.threads =
      root.has("threads") ? int(root["threads"].asIntIn(1, rt::ThreadPool::kMaxThreads)) : 1;
  if (m.cpuOnly) {
    m.target.name = "cpu";
  } else {
    try {
      m.target = isa::parseTarget(root["target"]["source_text"].asString(), origin + ":target");
    } catch (const Error &e) {
      fail("{}: corrupt npuc package: embedded target: {}", origin, e.what());
    }
  }
  m.options.doubleBuffer = root["options"]["double_buffer"].asBool();
  m.options.naiveTiling = root["options"]["naive_tiling"].asBool();
  m.options.crossGroupPrefetch = root["options"]["cross_group_prefetch"].asBool();
  m.options.bankAware = root["options"]["bank_aware"].asBool();
  m.options.residency = root["options"]["residency"].asBool();
  // Packages from before batch splitting have neither key: they ran every group on the batch.
  m.options.batchSplit =
      root["options"].has("batch_split") && root["options"]["batch_split"].asBool();
  m.options.batchSplitEvenIfSlower = root["options"].has("batch_split_even_if_slower") &&
                                     root["options"]["batch_split_even_if_slower"].asBool();
  // Packages from before weight reuse across the batch have no key: they reloaded per image.
  m.options.batchWeightReuse =
      root["options"].has("batch_weight_reuse") && root["options"]["batch_weight_reuse"].asBool();
  // Packages from before depth-first runs have no key: every group ran on whole tensors.
  m.options.depthFirst =
      root["options"].has("depth_first") && root["options"]["depth_first"].asBool();
  // Packages from before fused attention have no key: attention ran as three groups.
  m.options.fusedAttention =
      root["options"].has("fused_attention") && root["options"]["fused_attention"].asBool();
  m.options.depthFirstRows = root["options"].has("depth_first_rows")
                                 ? root["options"]["depth_first_rows"].asIntIn(0, INT64_MAX)
                                 : 0;
  m.options.segmentPerGroup =
      root["options"].has("segment_per_group") && root["options"]["segment_per_group"].asBool();
  // Packages from before --int8-accuracy have no key.
  if (root["options"].has("int8_accuracy"))
    m.options.int8AccuracyResult = root["options"]["int8_accuracy"].asString();
  if (std::string src = root["options"]["calibration"].asString(); !src.empty()) {
    // The runtime needs only the scales of the segments' DRAM tensors (stored with them); the
    // table keeps what the calibration ran on, for the report.
    auto q = std::make_shared<npu::QuantTable>();
    q->source = src;
    m.options.quant = q;
  }
  m.graph = detail::graphFromJson(root["graph"]);
  JsonIn segs = root["segments"], npuSegs = root["npu_segments"];
  for (size_t i = 0; i < npuSegs.size(); ++i)
    m.npuSegments.push_back(segmentFromJson(npuSegs.at(i), m, origin));
  // Segments must cover every group exactly once, in order, with consistent NPU indices.
  size_t nextGroup = 0;
  for (size_t i = 0; i < segs.size(); ++i) {
    JsonIn js = segs.at(i);
    Seg s;
    s.npu = js["npu"].asBool();
    s.npuIndex = int(js["npu_index"].asIntIn(-1, int64_t(m.npuSegments.size()) - 1));
    JsonIn groups = js["groups"];
    for (size_t k = 0; k < groups.size(); ++k) {
      int gid = int(groups.at(k).asIntIn(0, int64_t(m.graph.groups.size()) - 1));
      if (size_t(gid) != nextGroup++)
        groups.at(k).bad("segments must list every group once, in order");
      bool groupOnNpu = m.graph.groups[size_t(gid)].placement == graph::Placement::Npu;
      if (groupOnNpu != s.npu)
        groups.at(k).bad("group placement disagrees with the segment's");
      s.groups.push_back(gid);
    }
    if (s.npu != (s.npuIndex >= 0) ||
        (s.npu && m.npuSegments[size_t(s.npuIndex)].groups != s.groups))
      js.bad("npu_index does not match an NPU segment with the same groups");
    m.segments.push_back(std::move(s));
  }
  if (nextGroup != m.graph.groups.size())
    segs.bad(fmt::format("segments cover {} of {} groups", nextGroup, m.graph.groups.size()));
  // Packages from before native CPU code have none; the runtime checks the key against the
  // kernels it lowers before it links the object.
  if (root.has("cpu_code")) {
    JsonIn c = root["cpu_code"];
    m.cpuCode = cpu::NativeCode{c["key"].asString(), c["host"].asString(), c["object"].blob()};
  }
  return m;
}

void savePackage(const CompiledModel &m, const std::string &path) {
  writeFileAtomic(path, packageBytes(m));
}

CompiledModel loadPackage(const std::string &path) {
  MappedFile f(path);
  return parsePackage(f.bytes(), path);
}

} // namespace npuc::driver
