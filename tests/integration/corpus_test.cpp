// Every corpus entry (corpus.h) through `identity`, the output checked against its source with
// ffprobe and ffmpeg's psnr filter. The checks are worked out from the source, so that an entry
// states only what it is and the floors its picture must keep.
//
// Before/after tables: with FRAMEMILL_CORPUS_REPORT=FILE each entry appends one markdown row of
// what came out (scripts/corpus-report.sh writes the header and runs them all); with
// FRAMEMILL_CORPUS_FRAMEMILL=PATH the jobs run another framemill build (its framemill-worker
// beside it), e.g. an older one for the "before" column.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <cstring>
#include <tuple>

#include "corpus.h"
#include "harness.h"

using namespace framemill::test;

namespace {

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string Framemill() {
  const char* bin = std::getenv("FRAMEMILL_CORPUS_FRAMEMILL");
  return bin != nullptr && *bin != '\0' ? bin : FRAMEMILL_BIN;
}

std::string Tag(const nlohmann::json& obj, std::string key) {
  if (!obj.contains("tags") || !obj["tags"].is_object()) return "";
  for (auto it = obj["tags"].begin(); it != obj["tags"].end(); ++it) {
    std::string k = it.key();
    for (char& ch : k) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (k == key && it->is_string()) return it->get<std::string>();
  }
  return "";
}

bool Flag(const nlohmann::json& stream, const char* key) {
  return stream.contains("disposition") && stream["disposition"].value(key, 0) != 0;
}

std::string Text(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  std::string s = it->get<std::string>();
  return s == "unknown" ? "" : s;
}

// What a file shows: its processed (first, not cover art) video stream and everything else.
struct Observed {
  bool ok = false;
  std::string error;
  int stored_width = 0, stored_height = 0;
  int rotation = 0;  // 0, 90, 180, 270 (either direction: both swap the displayed axes alike)
  int shown_width = 0, shown_height = 0;
  int sar_num = 1, sar_den = 1;
  double display_aspect = 0;
  std::string pix_fmt, field_order;
  int bits = 8;
  std::string chroma;  // "420", "422", "444", "gray", "rgb"
  std::string primaries, transfer, matrix, range;
  bool mastering = false, light_level = false;
  int64_t frames = 0;
  std::string timecode;
  // Everything else players use, one line each: title, chapters, every other stream.
  std::vector<std::string> carried;
};

std::string ChromaOf(const std::string& pix_fmt) {
  for (const char* layout : {"420", "422", "444", "440", "411"}) {
    if (pix_fmt.find(layout) != std::string::npos) return layout;
  }
  if (pix_fmt.rfind("gray", 0) == 0) return "gray";
  return pix_fmt.empty() ? "" : "rgb";
}

int BitsOf(const std::string& pix_fmt) {
  for (int bits : {9, 10, 12, 14, 16}) {
    if (pix_fmt.find("p" + std::to_string(bits)) != std::string::npos) return bits;
  }
  return 8;
}

bool HasSideData(const nlohmann::json& obj, const std::string& type) {
  if (!obj.contains("side_data_list")) return false;
  for (const auto& sd : obj["side_data_list"]) {
    if (sd.value("side_data_type", "") == type) return true;
  }
  return false;
}

// `keep_titles`: the container holds track titles and the forced flag (Matroska); MP4 does not.
Observed Observe(const std::string& path, bool keep_titles) {
  Observed o;
  RunResult r = Shell(
      "ffprobe -v error -print_format json -show_format -show_streams "
      "-show_chapters " +
      Quote(path));
  if (r.exit_code != 0) {
    o.error = "ffprobe: " + r.err;
    return o;
  }
  nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json* video = nullptr;
  for (const auto& s : j["streams"]) {
    if (Text(s, "codec_type") == "video" && !Flag(s, "attached_pic")) {
      video = &s;
      break;
    }
  }
  if (video == nullptr) {
    o.error = "no video stream";
    return o;
  }
  const nlohmann::json& v = *video;
  const int index = v.value("index", 0);
  o.stored_width = v.value("width", 0);
  o.stored_height = v.value("height", 0);
  if (v.contains("side_data_list")) {
    for (const auto& sd : v["side_data_list"]) {
      if (sd.contains("rotation")) o.rotation = ((sd["rotation"].get<int>() % 360) + 360) % 360;
    }
  }
  const bool swap = o.rotation == 90 || o.rotation == 270;
  o.shown_width = swap ? o.stored_height : o.stored_width;
  o.shown_height = swap ? o.stored_width : o.stored_height;
  std::string sar = Text(v, "sample_aspect_ratio");
  if (std::sscanf(sar.c_str(), "%d:%d", &o.sar_num, &o.sar_den) != 2 || o.sar_num <= 0 ||
      o.sar_den <= 0) {
    o.sar_num = o.sar_den = 1;
  }
  double dar = static_cast<double>(o.stored_width) * o.sar_num / (o.stored_height * o.sar_den);
  o.display_aspect = swap ? 1.0 / dar : dar;
  o.pix_fmt = Text(v, "pix_fmt");
  o.bits = BitsOf(o.pix_fmt);
  o.chroma = ChromaOf(o.pix_fmt);
  o.field_order = Text(v, "field_order");
  o.primaries = Text(v, "color_primaries");
  o.transfer = Text(v, "color_transfer");
  o.matrix = Text(v, "color_space");
  // Limited range is what players assume of an untagged file: "tv" and untagged are the same.
  o.range = Text(v, "color_range") == "tv" ? "" : Text(v, "color_range");
  o.timecode = Tag(v, "timecode");
  o.mastering = HasSideData(v, "Mastering display metadata");
  o.light_level = HasSideData(v, "Content light level metadata");
  // Every frame of the stream (a few dozen at most): the count, and HDR side data on the first.
  RunResult f = Shell("ffprobe -v error -select_streams " + std::to_string(index) +
                      " -show_frames -print_format json " + Quote(path));
  if (f.exit_code == 0) {
    nlohmann::json frames = nlohmann::json::parse(f.out).value("frames", nlohmann::json::array());
    o.frames = static_cast<int64_t>(frames.size());
    if (!frames.empty()) {
      o.mastering = o.mastering || HasSideData(frames[0], "Mastering display metadata");
      o.light_level = o.light_level || HasSideData(frames[0], "Content light level metadata");
    }
  }

  const nlohmann::json& format = j["format"];
  o.carried.push_back("title: " + Tag(format, "title"));
  const double start = std::atof(Text(format, "start_time").c_str());
  for (const auto& ch : j.value("chapters", nlohmann::json::array())) {
    char line[200];
    std::snprintf(line, sizeof(line),
                  "chapter at %.2f s: ", std::atof(Text(ch, "start_time").c_str()) - start);
    o.carried.push_back(line + Tag(ch, "title"));
  }
  // MP4 marks tracks enabled: where no track of a kind is default, the first reads back default
  // (ffmpeg's mov muxer enables it). Both sides are read by that rule when the output is MP4.
  std::map<std::string, int> first_of_type;
  std::map<std::string, bool> any_default;
  for (const auto& s : j["streams"]) {
    std::string type = Text(s, "codec_type");
    if (type == "data") continue;
    first_of_type.emplace(type, s.value("index", 0));
    any_default[type] = any_default[type] || Flag(s, "default");
  }
  auto is_default = [&](const nlohmann::json& s) {
    std::string type = Text(s, "codec_type");
    return Flag(s, "default") ||
           (!keep_titles && !any_default[type] && first_of_type[type] == s.value("index", 0));
  };
  // The processed video is re-encoded: its codec is not compared, its tags and flags are.
  auto describe = [&](const nlohmann::json& s) {
    std::string lang = Tag(s, "language");
    if (lang == "und") lang.clear();
    // Text subtitles may change format to fit the container (SubRip to mov_text and back).
    const bool same_codec = &s != video && Text(s, "codec_type") != "subtitle";
    std::string d = Text(s, "codec_type") + " " + (same_codec ? Text(s, "codec_name") : "") +
                    " language=" + lang;
    if (keep_titles) d += " title=" + Tag(s, "title");
    if (is_default(s) && Text(s, "codec_type") != "attachment") d += " default";
    if (keep_titles && Flag(s, "forced")) d += " forced";
    if (Flag(s, "attached_pic")) d += " cover";
    if (Text(s, "codec_type") == "attachment") d += " file=" + Tag(s, "filename");
    return d;
  };
  o.carried.push_back("video: " + describe(v));
  for (const auto& s : j["streams"]) {
    std::string type = Text(s, "codec_type");
    // Data streams are the muxers' own (chapter and timecode tracks); a further video stream
    // that is not cover art is left out by design (only the first is processed).
    if (&s == video || type == "data" || (type == "video" && !Flag(s, "attached_pic"))) continue;
    o.carried.push_back(describe(s));
  }
  o.ok = true;
  return o;
}

struct Psnr {
  bool ok = false;
  double y = 0, chroma = 0;
  std::string error;
};

// Luma and chroma PSNR of `out` against `src`, both as players show them (rotation applied),
// compared in the source's pixel format, frames paired from each one's first.
Psnr MeasurePsnr(const std::string& out, const std::string& src, const std::string& pix_fmt) {
  Psnr p;
  std::string fmt = pix_fmt.empty() ? "yuv420p" : pix_fmt;
  std::string graph = "[0:v:0]setpts=PTS-STARTPTS,format=" + fmt + "[a];[1:v:0]setpts=PTS-" +
                      "STARTPTS,format=" + fmt + "[b];[a][b]psnr";
  RunResult r = Shell("ffmpeg -nostdin -hide_banner -i " + Quote(out) + " -i " + Quote(src) +
                      " -lavfi '" + graph + "' -f null - 2>&1");
  size_t at = r.out.find("PSNR y:");
  if (r.exit_code != 0 || at == std::string::npos) {
    p.error = "psnr failed";
    size_t e = r.out.find("rror");
    if (e != std::string::npos) p.error += ": " + r.out.substr(e - 1, r.out.find('\n', e) - e + 1);
    return p;
  }
  auto value = [&](const char* key) {
    size_t k = r.out.find(key, at);
    if (k == std::string::npos) return 0.0;
    std::string v = r.out.substr(k + std::strlen(key), 8);
    return v.rfind("inf", 0) == 0 ? 99.0 : std::atof(v.c_str());
  };
  p.y = value(" y:");
  p.chroma = std::min(value(" u:"), value(" v:"));
  p.ok = true;
  return p;
}

struct Outcome {
  int exit_code = -1;
  std::string error;  // the job's failure line
  Observed src, out;
  Psnr psnr;
  std::vector<std::string> failures;  // each check that failed, why
};

std::string JobFailure(const RunResult& r) {
  std::istringstream in(r.err);
  std::string line, found;
  while (std::getline(in, line)) {
    if (line.find("job failed") != std::string::npos) found = line;
  }
  if (found.empty()) found = r.err.substr(r.err.size() > 300 ? r.err.size() - 300 : 0);
  return found;
}

Outcome RunEntry(const CorpusEntry& e) {
  Outcome o;
  const std::string dir = ScratchDir("corpus/" + e.name);
  for (const std::string& command : e.commands) {
    RunResult r = Shell("cd " + Quote(dir) + " && " + command);
    if (r.exit_code != 0) {
      o.failures.push_back("generating the source failed: " + command + ": " + r.err);
      return o;
    }
  }
  const std::string src = dir + "/" + e.source, out = dir + "/" + e.output;
  const bool titles = e.output.size() > 4 && e.output.substr(e.output.size() - 4) == ".mkv";
  o.src = Observe(src, titles);
  if (!o.src.ok) {
    o.failures.push_back("the source cannot be read: " + o.src.error);
    return o;
  }
  nlohmann::json job = {{"input", src},
                        {"output", out},
                        {"model", ModelPath("identity")},
                        {"device", TestDevice()},
                        {"workers", 1}};
  job.update(nlohmann::json::parse(e.job_settings));
  std::ofstream(dir + "/job.json") << job.dump(2);
  RunResult r = Shell("cd " + Quote(dir) + " && " + Quote(Framemill()) + " run job.json");
  o.exit_code = r.exit_code;
  if (r.exit_code != 0) {
    o.error = JobFailure(r);
    o.failures.push_back("the job failed (exit " + std::to_string(r.exit_code) + "): " + o.error);
    return o;
  }
  o.out = Observe(out, titles);
  if (!o.out.ok) {
    o.failures.push_back("the output cannot be read: " + o.out.error);
    return o;
  }
  const Observed& s = o.src;
  const Observed& d = o.out;
  auto fail = [&](const std::string& why) { o.failures.push_back(why); };
  const bool interlaced = !s.field_order.empty() && s.field_order != "progressive";
  if (d.frames != s.frames && !(interlaced && d.frames == 2 * s.frames)) {
    fail("frames: " + std::to_string(d.frames) + ", the source has " + std::to_string(s.frames));
  }
  if (d.shown_width != s.shown_width || d.shown_height != s.shown_height) {
    fail("shown as " + std::to_string(d.shown_width) + "x" + std::to_string(d.shown_height) +
         ", the source " + std::to_string(s.shown_width) + "x" + std::to_string(s.shown_height));
  }
  if (std::fabs(d.display_aspect - s.display_aspect) > 0.01 * s.display_aspect) {
    fail("display aspect " + std::to_string(d.display_aspect) + ", the source " +
         std::to_string(s.display_aspect));
  }
  if (!e.expected_pix_fmt.empty()) {
    if (d.pix_fmt != e.expected_pix_fmt) {
      fail("pixel format " + d.pix_fmt + ", expected " + e.expected_pix_fmt);
    }
  } else if (d.bits != s.bits || d.chroma != s.chroma) {
    fail("pixel format " + d.pix_fmt + ", the source " + s.pix_fmt);
  }
  for (auto [name, got, want] :
       {std::tuple{"primaries", d.primaries, s.primaries},
        std::tuple{"transfer", d.transfer, s.transfer}, std::tuple{"matrix", d.matrix, s.matrix},
        std::tuple{"range", d.range, s.range}}) {
    if (!want.empty() && got != want) {
      fail(std::string(name) + " " + (got.empty() ? "untagged" : got) + ", the source " + want);
    }
  }
  if (s.mastering && !d.mastering) fail("mastering display metadata lost");
  if (s.light_level && !d.light_level) fail("content light level lost");
  if (interlaced && d.field_order != "progressive" && d.field_order != s.field_order) {
    fail("field order " + d.field_order + ", the source " + s.field_order);
  }
  if (!interlaced && !d.field_order.empty() && d.field_order != "progressive") {
    fail("field order " + d.field_order + " on a progressive source");
  }
  if (d.timecode != s.timecode)
    fail("timecode \"" + d.timecode + "\", the source \"" + s.timecode + "\"");
  if (d.carried != s.carried) {
    std::string diff;
    for (const std::string& line : s.carried) {
      if (std::find(d.carried.begin(), d.carried.end(), line) == d.carried.end())
        diff += " lost [" + line + "]";
    }
    for (const std::string& line : d.carried) {
      if (std::find(s.carried.begin(), s.carried.end(), line) == s.carried.end())
        diff += " gained [" + line + "]";
    }
    fail("carried metadata differs:" + (diff.empty() ? std::string(" order") : diff));
  }
  o.psnr = MeasurePsnr(out, src, s.pix_fmt);
  if (!o.psnr.ok) {
    fail(o.psnr.error);
  } else if (o.psnr.y < e.luma_floor_db || o.psnr.chroma < e.chroma_floor_db) {
    char line[160];
    std::snprintf(line, sizeof(line), "PSNR y %.1f dB, chroma %.1f dB; floors %.1f, %.1f", o.psnr.y,
                  o.psnr.chroma, e.luma_floor_db, e.chroma_floor_db);
    fail(line);
  }
  return o;
}

std::string Cell(std::string text) {
  for (char& c : text) {
    if (c == '|' || c == '\n') c = ' ';
  }
  return text.size() > 400 ? text.substr(0, 397) + "..." : text;
}

void Report(const CorpusEntry& e, const Outcome& o) {
  const char* path = std::getenv("FRAMEMILL_CORPUS_REPORT");
  if (path == nullptr || *path == '\0') return;
  std::string result = o.exit_code == 0 ? "exit 0" : "exit " + std::to_string(o.exit_code);
  if (!o.error.empty())
    result += ": " + o.error.substr(o.error.find("job failed") == std::string::npos
                                        ? 0
                                        : o.error.find("job failed"));
  std::string picture = "-", psnr = "-";
  if (o.out.ok) {
    picture = std::to_string(o.out.shown_width) + "x" + std::to_string(o.out.shown_height) +
              " SAR " + std::to_string(o.out.sar_num) + ":" + std::to_string(o.out.sar_den) + ", " +
              std::to_string(o.out.frames) + " frames, " + o.out.pix_fmt +
              (o.out.transfer.empty() ? "" : ", " + o.out.transfer);
  }
  if (o.psnr.ok) {
    char line[64];
    std::snprintf(line, sizeof(line), "%.1f / %.1f", o.psnr.y, o.psnr.chroma);
    psnr = line;
  }
  std::string verdict = o.failures.empty() ? "pass" : "FAIL: ";
  for (size_t i = 0; i < o.failures.size(); ++i) verdict += (i ? "; " : "") + o.failures[i];
  if (o.exit_code != 0 && !o.failures.empty()) verdict = "FAIL";
  std::ofstream(path, std::ios::app)
      << "| " << e.name << " | " << Cell(result) << " | " << Cell(picture) << " | " << psnr << " | "
      << Cell(verdict) << " |\n";
}

void CheckEntry(const std::string& name) {
  const CorpusEntry& e = CorpusEntryNamed(name);
  Outcome o = RunEntry(e);
  Report(e, o);
  INFO("corpus entry ", e.name, " (", e.what, "); waits for: ", std::string(Name(e.pending)));
  for (const std::string& why : o.failures) CHECK_MESSAGE(false, why);
}

bool IsPending(const char* name) { return CorpusEntryNamed(name).pending != Pending::kNone; }

}  // namespace

// One case per entry, so that ctest runs them side by side and names the one that fails.
#define CORPUS_CASE(entry) \
  TEST_CASE("corpus: " entry* doctest::may_fail(IsPending(entry))) { CheckEntry(entry); }

CORPUS_CASE("h264_aac_mp4")
CORPUS_CASE("mkv_chapters_tracks")
CORPUS_CASE("mp4_chapters_tracks")
CORPUS_CASE("srt_into_mp4")
CORPUS_CASE("mov_text_into_mkv")
CORPUS_CASE("timecode_mov")
CORPUS_CASE("cover_art_mp4")
CORPUS_CASE("cover_art_mkv")
CORPUS_CASE("two_video_streams")
CORPUS_CASE("variable_frame_rate")
CORPUS_CASE("open_gop")
CORPUS_CASE("mpeg2_ts_offset")
CORPUS_CASE("vp9_webm")
CORPUS_CASE("av1_webm")
// geometry rows
CORPUS_CASE("rotation_90")
CORPUS_CASE("rotation_180")
CORPUS_CASE("rotation_270")
CORPUS_CASE("anamorphic_pal")
CORPUS_CASE("anamorphic_ntsc")
CORPUS_CASE("odd_size")
CORPUS_CASE("interlaced_tff")
CORPUS_CASE("interlaced_bff")
// depth rows
CORPUS_CASE("ten_bit_420")
CORPUS_CASE("ten_bit_422")
CORPUS_CASE("twelve_bit")
CORPUS_CASE("yuv444")
CORPUS_CASE("full_range")
CORPUS_CASE("hdr10")
CORPUS_CASE("hlg")
CORPUS_CASE("prores_mov")

TEST_CASE("corpus: every entry of the table has its test case") {
  // The cases above are listed by hand (ctest needs them at build time): a table entry without
  // one would never run.
  std::ifstream in(std::string(FRAMEMILL_SOURCE_DIR) + "/tests/integration/corpus_test.cpp");
  std::stringstream text;
  text << in.rdbuf();
  for (const CorpusEntry& e : Corpus()) {
    CHECK_MESSAGE(text.str().find("CORPUS_CASE(\"" + e.name + "\")") != std::string::npos, e.name);
  }
}
