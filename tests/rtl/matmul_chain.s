# matmul_chain.s - `npuc cosim` CLI test (tests/rtl/CMakeLists.txt): two loads, a 3x5x6 matmul,
# a relu epilogue to fp16 and a store, chained by tokens; DRAM is zero apart from what the
# program writes, so it checks the control path and the waveform output.
ld dst_space=l0a dst_addr=0 elem_bytes=2 n0=15 n1=1 n2=1 src_addr=0 src_s0=1 dst_s0=1
ld push=0x4 dst_space=l0b dst_addr=0 elem_bytes=2 n0=30 n1=1 n2=1 src_addr=0x40 src_s0=1 dst_s0=1 pad0_lo=2 pad_value=0x3c00
mm pop=0x1 push=0x8 a_addr=0 b_addr=0 c_addr=0 m=3 k=5 n=6
vop pop=0x4 push=0x10 op=relu dst_space=l1 dst_addr=0 dst_dtype=fp16 src1_space=acc src1_addr=0 src1_dtype=fp32 n0=18 n1=1 n2=1 dst_s0=1 src1_s0=1
st pop=0x8 src_space=l1 src_addr=0 dst_addr=0x200 elem_bytes=2 n0=18 n1=1 n2=1 src_s0=1 dst_s0=1
finish
