# Read by ctest after the unit tests were discovered (tests/CMakeLists.txt):
# labels every case "unit" and "quick" (ctest -L quick: the unit tests and
# a handful of end-to-end copies), and adds to every case whose suite tests
# a feature that feature's label.
set(unit_feature_suites
  checkpoint CheckpointerTest CopyBooksTest CheckpointFileTest CheckpointFileIoTest CheckpointJobTest
             JobEnvironmentTest -
  retry NbdExportChangeTest NbdConnectionStateTest -
  incremental IncrementalCopyTest IncrementalCopySummarizeDirtyTest RangeListTest RangesJobTest TextLexerTest -
  blkhash BlkhashTest BlkhashSequentialTest -
  checksum OrderedChecksumTest CopyBooksChecksumTest -
  progress ProgressTest ProgressRenderTest ProgressFormatTest -
  option OptionChecksTest CommandLineTest OptionTableTest GetoptReadingTest HelpTextTest OptionNumbersParseNumberTest OptionNumbersParseSizeTest
         OptionNumbersFormatSizeTest OptionNumbersQuotedTest RateLimiterTest -
  tls NbdTlsTest -
  ssh SshUriTest -
  json ReportTest JobOutputTest -
  salvage SalvageTest SalvageLostRangesTest SalvageEngineTest -)
set(feature "")
foreach(word ${unit_feature_suites})
  if(word STREQUAL "-")
    set(feature "")
  elseif(feature STREQUAL "")
    set(feature ${word})
  else()
    set(feature_of_${word} ${feature})
  endif()
endforeach()

file(GLOB discovered "@CMAKE_CURRENT_BINARY_DIR@/unit_tests*_tests.cmake")
foreach(list_file ${discovered})
  file(STRINGS ${list_file} added REGEX "^add_test\\(")
  foreach(line ${added})
    # add_test([=[Prefix/Suite.Case/0]=] ...: the suite is the word before the first dot.
    if(line MATCHES "^add_test\\(\\[=*\\[([^]]+)\\]")
      set(test_name "${CMAKE_MATCH_1}")
      # (${CMAKE_MATCH_2} is expanded before an if() runs: one if per match.)
      set(labels "unit;quick")
      if(test_name MATCHES "^([^/.]+/)?([^./]+)\\.")
        if(DEFINED feature_of_${CMAKE_MATCH_2})
          set(labels "unit;quick;${feature_of_${CMAKE_MATCH_2}}")
        endif()
      endif()
      set_tests_properties("${test_name}" PROPERTIES LABELS "${labels}")
    endif()
  endforeach()
endforeach()
