#include "supervisor/media/carried_metadata.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "common/checked_file.h"
#include "supervisor/process/subprocess.h"

namespace framemill {
namespace {

// A tag by name, case-insensitively (Matroska tags read back upper-case: "TITLE", "TIMECODE").
std::string Tag(const nlohmann::json& obj, const std::string& key) {
  auto tags = obj.find("tags");
  if (tags == obj.end() || !tags->is_object()) return "";
  for (auto it = tags->begin(); it != tags->end(); ++it) {
    if (it.key().size() != key.size() || !it->is_string()) continue;
    bool same = true;
    for (size_t i = 0; i < key.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(it.key()[i])) == key[i];
    }
    if (same) return it->get<std::string>();
  }
  return "";
}

std::string Text(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

double Seconds(const nlohmann::json& obj, const char* key) {
  std::string s = Text(obj, key);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  return end != s.c_str() && std::isfinite(v) ? v : 0.0;
}

bool Flag(const nlohmann::json& stream, const char* key) {
  auto d = stream.find("disposition");
  if (d == stream.end() || !d->is_object()) return false;
  auto f = d->find(key);
  return f != d->end() && f->is_number_integer() && f->get<int>() != 0;
}

bool IsBitstreamTag(std::string key) {
  for (char& c : key) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  size_t dash = key.find('-');  // mkvmerge's per-language variants: "BPS-eng"
  if (dash != std::string::npos) key.resize(dash);
  return key == "ENCODER" || key == "BPS" || key == "DURATION" || key == "NUMBER_OF_FRAMES" ||
         key == "NUMBER_OF_BYTES" || key.rfind("_STATISTICS_", 0) == 0;
}

CarriedStream ReadStream(const nlohmann::json& s) {
  CarriedStream c;
  if (s.contains("index") && s["index"].is_number_integer()) c.index = s["index"].get<int>();
  c.type = Text(s, "codec_type");
  c.codec = Text(s, "codec_name");
  c.language = Tag(s, "language");
  if (c.language == "und") c.language.clear();
  c.title = Tag(s, "title");
  c.filename = Tag(s, "filename");
  c.mimetype = Tag(s, "mimetype");
  c.timecode = Tag(s, "timecode");
  c.is_default = Flag(s, "default");
  c.forced = Flag(s, "forced");
  c.attached_pic = Flag(s, "attached_pic");
  auto tags = s.find("tags");
  if (tags != s.end() && tags->is_object()) {
    for (auto it = tags->begin(); it != tags->end(); ++it) {
      if (IsBitstreamTag(it.key())) c.bitstream_tags.push_back(it.key());
    }
  }
  return c;
}

std::string DispositionText(const CarriedStream& s) {
  std::string d;
  if (s.is_default) d = "default";
  if (s.forced) d += d.empty() ? "forced" : "+forced";
  return d.empty() ? "0" : d;
}

// How a stream is named in a message: "audio stream 2 (fra)".
std::string Describe(const CarriedStream& s) {
  std::string d = s.type + " stream " + std::to_string(s.index);
  if (!s.language.empty()) d += " (" + s.language + ")";
  return d;
}

bool IsTextSubtitle(const std::string& codec) {
  return codec == "subrip" || codec == "ass" || codec == "ssa" || codec == "webvtt" ||
         codec == "mov_text" || codec == "text";
}

// How a subtitle codec gets into a container: "" by stream copy, else the codec to convert it to
// (text to text only: the cues and their times survive, styling may not); kNoWay when it cannot.
// Matroska takes every common text and bitmap format but not MP4's mov_text; MP4 takes mov_text
// only; WebM WebVTT only.
const std::string kNoWay = "-";
std::string SubtitleTarget(ContainerFamily family, const std::string& codec) {
  switch (family) {
    case ContainerFamily::kMatroska:
      return codec == "mov_text" ? "srt" : "";
    case ContainerFamily::kMp4:
      if (codec == "mov_text") return "";
      return IsTextSubtitle(codec) ? "mov_text" : kNoWay;
    case ContainerFamily::kWebm:
      if (codec == "webvtt") return "";
      return IsTextSubtitle(codec) ? "webvtt" : kNoWay;
    case ContainerFamily::kOther:
      return kNoWay;
  }
  return kNoWay;
}

// The codec name ffprobe reads back for an encoder name.
std::string DecoderName(const std::string& encoder) {
  return encoder == "srt" ? "subrip" : encoder;
}

Status Lost(const std::string& what) {
  return Status(StatusCode::kVerifyFailed, "the output lost what the source carries: " + what);
}

Status CheckStream(ContainerFamily family, const CarriedStream& want, const CarriedStream& got,
                   const std::string& name) {
  if (family == ContainerFamily::kOther) return Status::Ok();
  if (want.language != got.language) {
    return Lost(name + " has language \"" + got.language + "\", the source \"" + want.language +
                "\"");
  }
  const bool tracks_titles =
      family == ContainerFamily::kMatroska || family == ContainerFamily::kWebm;
  if (tracks_titles && want.title != got.title) {
    return Lost(name + " has title \"" + got.title + "\", the source \"" + want.title + "\"");
  }
  if (tracks_titles && (want.is_default != got.is_default || want.forced != got.forced)) {
    return Lost(name + " has disposition " + DispositionText(got) + ", the source " +
                DispositionText(want));
  }
  // MP4 marks a track enabled or not; a lone track of its kind reads back as default anyway.
  if (family == ContainerFamily::kMp4 && want.is_default && !got.is_default) {
    return Lost(name + " is no longer the default track");
  }
  return Status::Ok();
}

// ffprobe's JSON (-show_format -show_streams -show_chapters) of the file called `name`.
Result<CarriedMetadata> ParseCarried(const std::string& text, const std::string& name) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception&) {
    return Status(StatusCode::kInputInvalid, name + ": ffprobe gave unreadable output");
  }
  CarriedMetadata m;
  const nlohmann::json format = j.value("format", nlohmann::json::object());
  m.title = Tag(format, "title");
  m.timecode = Tag(format, "timecode");
  m.start_time = Seconds(format, "start_time");
  for (const nlohmann::json& c : j.value("chapters", nlohmann::json::array())) {
    m.chapters.push_back(Chapter{Seconds(c, "start_time") - m.start_time,
                                 Seconds(c, "end_time") - m.start_time, Tag(c, "title")});
  }
  for (const nlohmann::json& s : j.value("streams", nlohmann::json::array())) {
    m.streams.push_back(ReadStream(s));
  }
  return m;
}

}  // namespace

Result<CarriedMetadata> ProbeCarried(const std::string& ffprobe, const SourceFile& file) {
  std::vector<std::string> argv = {ffprobe, "-v", "error"};
  argv.insert(argv.end(), file.restrictions.begin(), file.restrictions.end());
  argv.insert(argv.end(), {"-print_format", "json", "-show_format", "-show_streams",
                           "-show_chapters", FdPath(file.fd)});
  Result<CommandOutput> r = RunAndCapture(argv, {file.fd});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status(StatusCode::kInputInvalid,
                  file.name + ": ffprobe could not read its metadata: " + LastLines(r->err, 3));
  }
  return ParseCarried(r->out, file.name);
}

Result<CarriedMetadata> CarriedOf(const MediaInfo& info, const std::string& name) {
  return ParseCarried(info.probe_json, name);
}

ContainerFamily FamilyOfMuxer(const std::string& muxer) {
  if (muxer == "matroska") return ContainerFamily::kMatroska;
  if (muxer == "webm") return ContainerFamily::kWebm;
  if (muxer == "mp4" || muxer == "mov" || muxer == "3gp") return ContainerFamily::kMp4;
  return ContainerFamily::kOther;
}

const char* Name(ContainerFamily family) {
  switch (family) {
    case ContainerFamily::kMatroska:
      return "matroska";
    case ContainerFamily::kWebm:
      return "webm";
    case ContainerFamily::kMp4:
      return "mp4";
    case ContainerFamily::kOther:
      return "other";
  }
  return "?";
}

CarriedPlan PlanCarried(const CarriedMetadata& source, int video_index, ContainerFamily family) {
  CarriedPlan plan;
  plan.family = family;
  std::vector<CarriedEntry> covers;
  std::string data_timecode;
  for (const CarriedStream& s : source.streams) {
    if (s.index == video_index) {
      plan.video = s;
      continue;
    }
    if (s.type == "audio") {
      plan.streams.push_back({s, CarryMode::kCopy, "", ""});
    } else if (s.type == "subtitle") {
      std::string target = SubtitleTarget(family, s.codec);
      if (target != kNoWay) {
        plan.streams.push_back({s, CarryMode::kCopy, "", target});
      } else {
        plan.left_out.push_back(Describe(s) + ": " + s.codec + " subtitles cannot go into " +
                                Name(family) + " output");
      }
    } else if (s.type == "attachment") {
      if (family == ContainerFamily::kMatroska) {
        plan.streams.push_back({s, CarryMode::kCopy, "", ""});
      } else {
        plan.left_out.push_back(Describe(s) + " (" + s.filename + "): only Matroska output " +
                                "holds attachments");
      }
    } else if (s.type == "video" && s.attached_pic) {
      const bool picture = s.codec == "mjpeg" || s.codec == "png";
      if (family == ContainerFamily::kMp4 && picture) {
        plan.streams.push_back({s, CarryMode::kCopy, "", ""});
      } else if (family == ContainerFamily::kMatroska && picture) {
        covers.push_back({s, CarryMode::kCoverAsFile, "", ""});
      } else {
        plan.left_out.push_back(Describe(s) + ": " + s.codec + " cover art cannot be kept in " +
                                Name(family) + " output");
      }
    } else if (s.type == "video") {
      plan.left_out.push_back(Describe(s) + ": a further video stream (only the first one is " +
                              "processed)");
    } else if (s.type == "data" && !s.timecode.empty()) {
      if (data_timecode.empty()) data_timecode = s.timecode;
    }
    // Other data streams are not mapped and not warned about: most are a muxer's own (MP4
    // chapter text tracks, which -map_chapters writes again).
  }
  plan.streams.insert(plan.streams.end(), covers.begin(), covers.end());
  plan.timecode = !plan.video.timecode.empty() ? plan.video.timecode
                  : !source.timecode.empty()   ? source.timecode
                                               : data_timecode;
  return plan;
}

std::vector<std::string> CarriedArguments(const CarriedPlan& plan) {
  std::vector<std::string> a;
  for (const CarriedEntry& e : plan.streams) {
    if (e.mode == CarryMode::kCopy)
      a.insert(a.end(), {"-map", "1:" + std::to_string(e.source.index)});
  }
  for (const CarriedEntry& e : plan.streams) {
    if (e.mode == CarryMode::kCoverAsFile) a.insert(a.end(), {"-attach", e.cover_file});
  }
  a.insert(a.end(), {"-map_metadata", "1", "-map_chapters", "1"});
  // Naming any stream's metadata source turns ffmpeg's own per-stream copying off for all of
  // them, so every output stream names its own.
  a.insert(a.end(), {"-map_metadata:s:0", "1:s:" + std::to_string(plan.video.index),
                     "-disposition:0", DispositionText(plan.video)});
  for (const std::string& key : plan.video.bitstream_tags) {
    a.insert(a.end(), {"-metadata:s:0", key + "="});
  }
  if (!plan.timecode.empty() && plan.video.timecode.empty()) {
    a.insert(a.end(), {"-metadata:s:0", "timecode=" + plan.timecode});
  }
  for (size_t i = 0; i < plan.streams.size(); ++i) {
    const CarriedEntry& e = plan.streams[i];
    const std::string out = std::to_string(i + 1);
    if (e.mode == CarryMode::kCopy) {
      a.insert(a.end(), {"-map_metadata:s:" + out, "1:s:" + std::to_string(e.source.index)});
      if (!e.convert_to.empty()) a.insert(a.end(), {"-c:" + out, e.convert_to});
      if (e.source.type == "attachment") continue;  // attachments have no disposition
      a.insert(a.end(), {"-disposition:" + out,
                         e.source.attached_pic ? "attached_pic" : DispositionText(e.source)});
    } else {
      std::string name = e.source.filename;
      if (name.empty()) name = e.source.codec == "png" ? "cover.png" : "cover.jpg";
      a.insert(a.end(),
               {"-metadata:s:" + out, "filename=" + name, "-metadata:s:" + out,
                std::string("mimetype=") + (e.source.codec == "png" ? "image/png" : "image/jpeg")});
    }
  }
  return a;
}

Status CheckCarriedMetadata(const CarriedMetadata& source, const CarriedPlan& plan,
                            const CarriedMetadata& out) {
  const ContainerFamily family = plan.family;
  // Data streams in the output are the muxer's own (MP4 chapter and timecode tracks); the plan
  // never writes one.
  std::vector<CarriedStream> streams;
  for (const CarriedStream& s : out.streams) {
    if (s.type != "data") streams.push_back(s);
  }
  if (streams.size() != plan.streams.size() + 1) {
    return Lost("the output has " + std::to_string(streams.size()) + " streams, " +
                std::to_string(plan.streams.size() + 1) + " were written");
  }
  for (size_t i = 0; i < plan.streams.size(); ++i) {
    const CarriedStream& want = plan.streams[i].source;
    const CarriedStream& got = streams[i + 1];
    const std::string name = Describe(want) + " (output stream " + std::to_string(i + 1) + ")";
    // Matroska reads cover art back as an attached picture, whichever way it was written.
    const std::string want_type = want.attached_pic ? "video" : want.type;
    const std::string want_codec =
        plan.streams[i].convert_to.empty() ? want.codec : DecoderName(plan.streams[i].convert_to);
    if (got.type != want_type || got.codec != want_codec) {
      return Lost(name + " came out as " + got.type + " " + got.codec);
    }
    if (want.attached_pic && !got.attached_pic) return Lost(name + ": no longer cover art");
    if (want.attached_pic) continue;
    if (want.type == "attachment") {
      if (family == ContainerFamily::kMatroska &&
          (got.mimetype != want.mimetype ||
           (!want.filename.empty() && got.filename != want.filename))) {
        return Lost(name + " is attached as \"" + got.filename + "\" (" + got.mimetype +
                    "), the source \"" + want.filename + "\" (" + want.mimetype + ")");
      }
      continue;
    }
    FM_RETURN_IF_ERROR(CheckStream(family, want, got, name));
  }
  if (family == ContainerFamily::kOther) return Status::Ok();
  FM_RETURN_IF_ERROR(CheckStream(family, plan.video, streams[0], "the video stream"));
  if (source.title != out.title) {
    return Lost("the title is \"" + out.title + "\", the source's \"" + source.title + "\"");
  }
  if (out.chapters.size() != source.chapters.size()) {
    return Lost(std::to_string(out.chapters.size()) + " chapters, the source has " +
                std::to_string(source.chapters.size()));
  }
  for (size_t i = 0; i < source.chapters.size(); ++i) {
    const Chapter& want = source.chapters[i];
    const Chapter& got = out.chapters[i];
    if (std::fabs(want.start - got.start) > 0.02 || want.title != got.title) {
      char line[160];
      std::snprintf(line, sizeof(line), "chapter %zu starts at %.3f s, the source's at %.3f s",
                    i + 1, got.start, want.start);
      return Lost(std::string(line) + " (titles \"" + got.title + "\", \"" + want.title + "\")");
    }
  }
  if (family != ContainerFamily::kWebm && streams[0].timecode != plan.timecode) {
    return Lost("the video's timecode is \"" + streams[0].timecode + "\", the source's \"" +
                plan.timecode + "\"");
  }
  return Status::Ok();
}

}  // namespace framemill
