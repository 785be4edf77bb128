vop pop=tensor op=add dst_space=acc dst_dtype=fp32 src1_space=acc src1_dtype=fp32 src2_space=l1 src2_addr=32768 src2_dtype=fp32 n0=16 n1=32 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16 src2_s0=1
vop push=tensor op=relu dst_space=l1 dst_addr=2048 src1_space=acc src1_dtype=fp32 n0=16 n1=32 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16
ld pop=feed push=feed src_addr=384 dst_space=l1 dst_addr=33456 elem_bytes=2 n0=3 n1=34 n2=3 src_s0=1 src_s1=3 src_s2=96 dst_s0=1 dst_s1=3 dst_s2=102 pad1_lo=1 pad1_hi=1
mov pop=load|tensor src_space=l1 src_addr=33456 dst_space=l0a dst_addr=1728 elem_bytes=2 n0=9 n1=32 n2=1 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov src_space=l1 src_addr=33660 dst_space=l0a dst_addr=1746 elem_bytes=2 n0=9 n1=32 n2=1 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov push=load src_space=l1 src_addr=33864 dst_space=l0a dst_addr=1764 elem_bytes=2 n0=9 n1=32 n2=1 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov push=tensor src_space=l1 src_addr=34080 dst_space=l0b dst_addr=864 elem_bytes=2 n0=16 n1=27 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
mm pop=feed|vector push=feed|vector a_addr=1728 b_addr=864 c_addr=2048 m=32 k=27 n=16
vop pop=tensor op=add dst_space=acc dst_addr=2048 dst_dtype=fp32 src1_space=acc src1_addr=2048 src1_dtype=fp32 src2_space=l1 src2_addr=32768 src2_dtype=fp32 n0=16 n1=32 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16 src2_s0=1
vop push=tensor op=relu dst_space=l1 dst_addr=3072 src1_space=acc src1_addr=2048 src1_dtype=fp32 n0=16 n1=32 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16
ld pop=feed push=feed src_addr=576 dst_space=l1 dst_addr=32832 elem_bytes=2 n0=3 n1=34 n2=3 src_s0=1 src_s1=3 src_s2=96 dst_s0=1 dst_s1=3 dst_s2=102 pad1_lo=1 pad1_hi=1
mov pop=load|tensor src_space=l1 src_addr=32832 dst_space=l0a elem_bytes=2 n0=9 n1=32 n2=1 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
