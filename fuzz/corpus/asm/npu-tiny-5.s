mov src_space=l1 src_addr=50700 dst_space=l0a dst_addr=6930 elem_bytes=2 n0=9 n1=32 n2=4 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov push=load src_space=l1 src_addr=50904 dst_space=l0a dst_addr=6948 elem_bytes=2 n0=9 n1=32 n2=4 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov push=tensor src_space=l1 src_addr=51776 dst_space=l0b dst_addr=432 elem_bytes=2 n0=8 n1=27 n2=1 src_s0=1 src_s1=8 dst_s0=1 dst_s1=8
mm pop=feed|vector push=feed|vector a_addr=6912 b_addr=432 c_addr=4096 m=128 k=27 n=8
vop pop=tensor op=add dst_space=acc dst_addr=4096 dst_dtype=fp32 src1_space=acc src1_addr=4096 src1_dtype=fp32 src2_space=l1 src2_addr=49152 src2_dtype=fp32 n0=8 n1=128 n2=1 dst_s0=1 dst_s1=8 src1_s0=1 src1_s1=8 src2_s0=1
vop push=tensor op=relu dst_space=l1 dst_addr=45056 src1_space=acc src1_addr=4096 src1_dtype=fp32 n0=8 n1=128 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=8
ld src_addr=6704 dst_space=l1 dst_addr=52224 elem_bytes=2 n0=8 n1=3 n2=9 src_s0=1 src_s1=8 src_s2=24 dst_s0=1 dst_s1=8 dst_s2=24
ld pop=feed push=feed dst_space=l1 dst_addr=49216 elem_bytes=2 n0=3 n1=34 n2=6 src_s0=1 src_s1=3 src_s2=96 dst_s0=1 dst_s1=3 dst_s2=102 pad1_lo=1 pad1_hi=1 pad2_lo=1
mov pop=load|tensor src_space=l1 src_addr=49216 dst_space=l0a elem_bytes=2 n0=9 n1=32 n2=4 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov src_space=l1 src_addr=49420 dst_space=l0a dst_addr=18 elem_bytes=2 n0=9 n1=32 n2=4 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov push=load src_space=l1 src_addr=49624 dst_space=l0a dst_addr=36 elem_bytes=2 n0=9 n1=32 n2=4 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov push=tensor src_space=l1 src_addr=52224 dst_space=l0b elem_bytes=2 n0=8 n1=27 n2=1 src_s0=1 src_s1=8 dst_s0=1 dst_s1=8
