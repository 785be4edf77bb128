mov push=tensor src_space=l1 src_addr=1010560 dst_space=l0b dst_addr=32512 elem_bytes=1 n0=16 n1=16 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
mm pop=feed push=feed a_addr=28672 b_addr=32512 c_addr=98304 m=256 k=16 n=16 accumulate=1
mov pop=tensor src_space=l1 src_addr=8720 dst_space=l0a dst_addr=24576 elem_bytes=1 n0=16 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=1024 dst_s0=1 dst_s1=16 dst_s2=256
mov push=tensor src_space=l1 src_addr=1010816 dst_space=l0b dst_addr=32256 elem_bytes=1 n0=16 n1=16 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
mm pop=feed push=feed|vector a_addr=24576 b_addr=32256 c_addr=98304 m=256 k=16 n=16 accumulate=1
vop pop=load|tensor op=mul dst_space=acc dst_addr=98304 dst_dtype=fp32 src1_space=acc src1_addr=98304 src1_dtype=int32 src2_space=l1 src2_addr=1048448 src2_dtype=fp32 n0=16 n1=256 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16 src2_s0=1
vop op=add dst_space=acc dst_addr=98304 dst_dtype=fp32 src1_space=acc src1_addr=98304 src1_dtype=fp32 src2_space=l1 src2_addr=1048320 src2_dtype=fp32 n0=16 n1=256 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16 src2_s0=1
vop op=relu dst_space=acc dst_addr=98304 dst_dtype=fp32 src1_space=acc src1_addr=98304 src1_dtype=fp32 n0=16 n1=256 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16
vop op=muladd dst_space=l1 dst_dtype=int8 src1_space=acc src1_addr=98304 src1_dtype=fp32 n0=16 n1=256 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=16 imm0=0x42dc5971
ld push=feed src_addr=6272 dst_space=l1 dst_addr=1011072 elem_bytes=1 n0=16 n1=16 n2=9 src_s0=1 src_s1=16 src_s2=256 dst_s0=1 dst_s1=16 dst_s2=256
mov pop=tensor src_space=l1 src_addr=8720 dst_space=l0a dst_addr=28672 elem_bytes=1 n0=16 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=1024 dst_s0=1 dst_s1=16 dst_s2=256 pad1_lo=1 pad2_lo=1
mov pop=load push=tensor src_space=l1 src_addr=1011072 dst_space=l0b dst_addr=32512 elem_bytes=1 n0=16 n1=16 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
