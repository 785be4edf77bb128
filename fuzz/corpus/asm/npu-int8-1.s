vop op=muladd dst_space=l1 dst_addr=8192 dst_dtype=int8 src1_space=acc src1_dtype=fp32 n0=16 n1=576 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16 imm0=0x422ec678
ld push=feed src_addr=1632 dst_space=l1 dst_addr=26752 elem_bytes=1 n0=3 n1=34 n2=16 src_s0=1 src_s1=3 src_s2=96 dst_s0=1 dst_s1=3 dst_s2=102 pad1_lo=1 pad1_hi=1 pad2_hi=1
mov pop=load src_space=l1 src_addr=26752 dst_space=l0a dst_addr=15552 elem_bytes=1 n0=9 n1=32 n2=14 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov src_space=l1 src_addr=26854 dst_space=l0a dst_addr=15561 elem_bytes=1 n0=9 n1=32 n2=14 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov src_space=l1 src_addr=26956 dst_space=l0a dst_addr=15570 elem_bytes=1 n0=9 n1=32 n2=14 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov push=tensor src_space=l1 src_addr=28800 dst_space=l0b dst_addr=432 elem_bytes=1 n0=16 n1=27 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
mm pop=feed push=feed|vector a_addr=15552 b_addr=432 c_addr=36864 m=448 k=27 n=16
vop pop=tensor op=mul dst_space=acc dst_addr=36864 dst_dtype=fp32 src1_space=acc src1_addr=36864 src1_dtype=int32 src2_space=l1 src2_addr=24576 src2_dtype=fp32 n0=16 n1=448 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16 src2_s0=1
vop op=add dst_space=acc dst_addr=36864 dst_dtype=fp32 src1_space=acc src1_addr=36864 src1_dtype=fp32 src2_space=l1 src2_addr=24640 src2_dtype=fp32 n0=16 n1=448 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16 src2_s0=1
vop op=relu dst_space=acc dst_addr=36864 dst_dtype=fp32 src1_space=acc src1_addr=36864 src1_dtype=fp32 n0=16 n1=448 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16
vop push=feed op=muladd dst_space=l1 dst_addr=17408 dst_dtype=int8 src1_space=acc src1_addr=36864 src1_dtype=fp32 n0=16 n1=448 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16 imm0=0x422ec678
ld push=vector src_addr=3712 dst_space=l1 dst_addr=1048448 elem_bytes=2 n0=64 n1=1 n2=1 src_s0=1 src_s1=64 dst_s0=1 dst_s1=64
