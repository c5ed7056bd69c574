// The generated test corpus: the kinds of files people bring (phone clips, DVD and broadcast
// captures, camera and screen recordings, files with chapters, several tracks, fonts, cover art,
// timecode), each made by the tests themselves with ffmpeg (and mkvmerge) as a tiny clip, so the
// whole corpus runs in about a minute. corpus_test.cpp runs every entry through the `identity`
// model and checks the output against the source: frame count, displayed geometry, aspect, bit
// depth and chroma layout, colour tags and HDR metadata, field order, what the source carries
// beside its picture (see Carried in corpus_test.cpp), and luma and chroma PSNR above the entry's
// floors.
#pragma once

#include <string>
#include <vector>

namespace framemill::test {

// Which piece of work an entry needs before it can pass: entries that wait for it run as
// expected-to-fail (doctest may_fail) so the suite stays green; flip `pending` to kNone in the
// table once the feature is merged.
enum class Pending {
  kNone,
  kGeometry,  // orientation, sample aspect, odd sizes, interlacing (issue 11 items 1-3, 6)
  kDepth,     // bit depth, chroma layout, HDR and colour tags (issue 11 items 4-5)
};
const char* Name(Pending pending);

// Flip to true once the colour path (issue 11 item 5) is merged: the default chroma floor then
// rises from what framemill keeps today on the 8-bit 4:2:0 test picture (31 dB) to just under
// what ffmpeg's own explicit-matrix RGB round trip keeps at the same encoder settings (37.8 dB).
inline constexpr bool kColourPathMerged = true;
inline constexpr double kChromaFloorDb = kColourPathMerged ? 36.0 : 30.0;
// ffmpeg's round trip keeps 43.1 dB of luma on the test picture, framemill today 41.8 dB.
inline constexpr double kLumaFloorDb = 40.0;

struct CorpusEntry {
  std::string name;    // the test case's name and its scratch directory
  std::string what;    // what kind of real-world file it stands for
  std::string source;  // the file the commands make, in the entry's directory
  std::string output;  // the output file name (its extension picks the container)
  // Shell commands run in order with the entry's directory as the working directory.
  std::vector<std::string> commands;
  double luma_floor_db = kLumaFloorDb;      // PSNR of Y against the source, frames averaged
  double chroma_floor_db = kChromaFloorDb;  // the lower of U's and V's PSNR
  Pending pending = Pending::kNone;
  // Job keys beside input, output, model and device (e.g. an encoder that keeps 12 bits).
  std::string job_settings = "{}";
  // The output's pixel format where it differs from the source's by design ("" = the source's).
  std::string expected_pix_fmt;
};

// Every entry, in a fixed order.
const std::vector<CorpusEntry>& Corpus();

// The entry named `name`; throws std::out_of_range when there is none.
const CorpusEntry& CorpusEntryNamed(const std::string& name);

}  // namespace framemill::test
