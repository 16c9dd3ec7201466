#include "shardloader/decode/text.h"

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardloader {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParseIntLabelTest, ParsesWhatWebDatasetWrites) {
  EXPECT_EQ(ParseIntLabel("7").value(), 7);
  EXPECT_EQ(ParseIntLabel("7\n").value(), 7);
  EXPECT_EQ(ParseIntLabel("  \t42 \r\n").value(), 42);
  EXPECT_EQ(ParseIntLabel("-3").value(), -3);
  EXPECT_EQ(ParseIntLabel("+3").value(), 3);
  EXPECT_EQ(ParseIntLabel("0007").value(), 7);
  EXPECT_EQ(ParseIntLabel("0").value(), 0);
}

TEST(ParseIntLabelTest, AcceptsTheWholeInt64Range) {
  EXPECT_EQ(ParseIntLabel("9223372036854775807").value(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ParseIntLabel("-9223372036854775808").value(), std::numeric_limits<int64_t>::min());
}

TEST(ParseIntLabelTest, RejectsOutOfRange) {
  for (const char* text :
       {"9223372036854775808", "-9223372036854775809", "99999999999999999999999"}) {
    const auto label = ParseIntLabel(text);
    EXPECT_EQ(label.status().code(), absl::StatusCode::kDataLoss) << text;
  }
}

TEST(ParseIntLabelTest, RejectsNonIntegers) {
  for (const char* text : {"", " ", "\n", "-", "+", "--1", "+-1", "1.5", "1e3", "0x10", "seven",
                           "1 2", "12a", "a12", "- 1", "１"}) {
    const auto label = ParseIntLabel(text);
    EXPECT_EQ(label.status().code(), absl::StatusCode::kDataLoss) << "'" << text << "'";
  }
}

TEST(ParseIntLabelTest, RejectsEmbeddedNul) {
  const std::string text("1\0", 2);
  EXPECT_EQ(ParseIntLabel(text).status().code(), absl::StatusCode::kDataLoss);
}

TEST(ParseIntLabelTest, ErrorQuotesAtMost32Bytes) {
  const auto short_label = ParseIntLabel("cat\n");
  EXPECT_THAT(std::string(short_label.status().message()), HasSubstr("\"cat\\n\""));
  const std::string long_text = std::string(32, 'x') + "TAIL";
  const auto long_label = ParseIntLabel(long_text);
  const std::string message(long_label.status().message());
  EXPECT_THAT(message, HasSubstr(std::string(32, 'x') + "\"..."));
  EXPECT_THAT(message, Not(HasSubstr("TAIL")));
}

TEST(ValidateUtf8Test, AcceptsWellFormedText) {
  EXPECT_TRUE(ValidateUtf8("").ok());
  EXPECT_TRUE(ValidateUtf8("plain ASCII, long enough for the fast path").ok());
  EXPECT_TRUE(ValidateUtf8("caf\xC3\xA9").ok());           // é
  EXPECT_TRUE(ValidateUtf8("\xE2\x82\xAC").ok());          // €
  EXPECT_TRUE(ValidateUtf8("\xF0\x9F\x98\x80").ok());      // U+1F600
  EXPECT_TRUE(ValidateUtf8("\xC2\x80").ok());              // U+0080
  EXPECT_TRUE(ValidateUtf8("\xE0\xA0\x80").ok());          // U+0800
  EXPECT_TRUE(ValidateUtf8("\xED\x9F\xBF").ok());          // U+D7FF
  EXPECT_TRUE(ValidateUtf8("\xEE\x80\x80").ok());          // U+E000
  EXPECT_TRUE(ValidateUtf8("\xEF\xBF\xBF").ok());          // U+FFFF
  EXPECT_TRUE(ValidateUtf8("\xF0\x90\x80\x80").ok());      // U+10000
  EXPECT_TRUE(ValidateUtf8("\xF4\x8F\xBF\xBF").ok());      // U+10FFFF
  EXPECT_TRUE(ValidateUtf8(std::string("a\0b", 3)).ok());  // U+0000
}

TEST(ValidateUtf8Test, RejectsIllFormedSequences) {
  struct Case {
    std::string text;
    size_t position;
  };
  const Case cases[] = {
      {"\x80", 0},              // lone continuation byte
      {"ab\xBF", 2},            // lone continuation byte
      {"\xC0\xAF", 0},          // overlong '/'
      {"\xC1\xBF", 0},          // overlong
      {"\xE0\x80\xAF", 0},      // overlong, 3 bytes
      {"\xE0\x9F\xBF", 0},      // overlong U+07FF
      {"\xF0\x80\x80\xAF", 0},  // overlong, 4 bytes
      {"\xF0\x8F\xBF\xBF", 0},  // overlong U+FFFF
      {"\xED\xA0\x80", 0},      // surrogate U+D800
      {"\xED\xBF\xBF", 0},      // surrogate U+DFFF
      {"\xF4\x90\x80\x80", 0},  // U+110000
      {"\xF5\x80\x80\x80", 0},  // lead byte above F4
      {"\xFF", 0},
      {"\xFE", 0},
      {"x\xC3", 1},                  // truncated 2-byte sequence
      {"x\xE2\x82", 1},              // truncated 3-byte sequence
      {"\xF0\x9F\x98", 0},           // truncated 4-byte sequence
      {"\xC3(", 0},                  // bad continuation
      {"\xE2\x28\xA1", 0},           // bad continuation
      {"\xE2\x82\x28", 0},           // bad third byte
      {"\xF0\x9F\x98\x28", 0},       // bad fourth byte
      {"0123456789abcdef\xC3", 16},  // after the fast path
      {"01234567\xE2\x82\xAC"
       "89\x80",
       13},
  };
  for (const Case& c : cases) {
    const absl::Status status = ValidateUtf8(c.text);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << c.position;
    EXPECT_THAT(std::string(status.message()), HasSubstr("at byte " + std::to_string(c.position)));
  }
}

}  // namespace
}  // namespace shardloader
