# simnic synth + simnic pcap, end to end: a clean capture decodes with no
# error; a capture with corrupted packets is flagged and --strict fails.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

function(run expect_rc out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL ${expect_rc})
    message(FATAL_ERROR "${ARGN}\nexit ${rc}, expected ${expect_rc}\n${out}\n${err}")
  endif()
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()

foreach(variant "" "--ipv6" "--vlan;7")
  run(0 out ${SIMNIC} synth ${WORK}/clean.pcap --mtu 1024 ${variant})
  run(0 out ${SIMNIC} pcap --strict ${WORK}/clean.pcap)
  if(NOT out MATCHES "# 40 packets: 40 RoCE v2 ok, 0 bad ICRC, 0 malformed")
    message(FATAL_ERROR "unexpected summary for '${variant}':\n${out}")
  endif()
  foreach(op RC_SEND_FIRST RC_RDMA_WRITE_LAST_WITH_IMMEDIATE RC_RDMA_READ_RESPONSE_MIDDLE
             RC_COMPARE_SWAP RC_FETCH_ADD RC_ATOMIC_ACKNOWLEDGE UC_SEND_LAST UD_SEND_ONLY_WITH_IMMEDIATE
             "NAK remote access error" "RNR NAK timer 12")
    if(NOT out MATCHES "${op}")
      message(FATAL_ERROR "'${op}' missing from simnic pcap output:\n${out}")
    endif()
  endforeach()
endforeach()

run(0 out ${SIMNIC} synth ${WORK}/bad.pcap --corrupt-every 5)
run(1 out ${SIMNIC} pcap --strict ${WORK}/bad.pcap)
if(NOT out MATCHES "ICRC BAD" OR NOT out MATCHES "# 40 packets: 32 RoCE v2 ok, 8 bad ICRC")
  message(FATAL_ERROR "corruption not reported:\n${out}")
endif()

run(0 out ${SIMNIC} pcap -v -c 1 ${WORK}/clean.pcap)
foreach(hdr "Ethernet:" "802.1Q" "IPv4:" "UDP: sport" "BTH: opcode 0x00" "Payload: 1024 bytes")
  if(NOT out MATCHES "${hdr}")
    message(FATAL_ERROR "'${hdr}' missing from simnic pcap -v:\n${out}")
  endif()
endforeach()

# Bad input: a missing file and a file that is not a capture give a clear error.
run(2 out ${SIMNIC} pcap ${WORK}/does-not-exist.pcap)
file(WRITE ${WORK}/junk.pcap "this is not a capture")
run(2 out ${SIMNIC} pcap ${WORK}/junk.pcap)
if(NOT out MATCHES "simnic pcap:")
  message(FATAL_ERROR "no clear error for a junk file:\n${out}")
endif()

# The RTL ICRC engine through the CLI: it must agree with the C++ core on
# every frame, good and corrupted.
run(0 out ${SIMNIC} rtl icrc ${WORK}/bad.pcap)
if(NOT out MATCHES "verdicts: 32 ok, 8 bad; agree with the C\\+\\+ packet core on 40, disagree on 0")
  message(FATAL_ERROR "simnic rtl icrc on a corrupted capture:\n${out}")
endif()
run(0 out ${SIMNIC} rtl icrc -v ${WORK}/clean.pcap)
if(NOT out MATCHES "verdicts: 40 ok, 0 bad" OR NOT out MATCHES "latency 7 cycles")
  message(FATAL_ERROR "simnic rtl icrc on a clean capture:\n${out}")
endif()
