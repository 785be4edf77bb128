ld push=vector src_addr=3136 dst_space=l1 dst_addr=24576 elem_bytes=2 n0=32 n1=1 n2=1 src_s0=1 src_s1=32 dst_s0=1 dst_s1=32
ld src_addr=3200 dst_space=l1 dst_addr=24640 elem_bytes=2 n0=32 n1=1 n2=1 src_s0=1 src_s1=32 dst_s0=1 dst_s1=32
ld src_addr=3264 dst_space=l1 dst_addr=28800 elem_bytes=1 n0=16 n1=3 n2=9 src_s0=1 src_s1=16 src_s2=48 dst_s0=1 dst_s1=16 dst_s2=48
ld push=feed dst_space=l1 dst_addr=24704 elem_bytes=1 n0=3 n1=34 n2=20 src_s0=1 src_s1=3 src_s2=96 dst_s0=1 dst_s1=3 dst_s2=102 pad1_lo=1 pad1_hi=1 pad2_lo=1
mov pop=load src_space=l1 src_addr=24704 dst_space=l0a elem_bytes=1 n0=9 n1=32 n2=18 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov src_space=l1 src_addr=24806 dst_space=l0a dst_addr=9 elem_bytes=1 n0=9 n1=32 n2=18 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov src_space=l1 src_addr=24908 dst_space=l0a dst_addr=18 elem_bytes=1 n0=9 n1=32 n2=18 src_s0=1 src_s1=3 src_s2=102 dst_s0=1 dst_s1=27 dst_s2=864
mov push=tensor src_space=l1 src_addr=28800 dst_space=l0b elem_bytes=1 n0=16 n1=27 n2=1 src_s0=1 src_s1=16 dst_s0=1 dst_s1=16
mm pop=feed push=vector m=576 k=27 n=16
vop pop=load|tensor op=mul dst_space=acc dst_dtype=fp32 src1_space=acc src1_dtype=int32 src2_space=l1 src2_addr=24576 src2_dtype=fp32 n0=16 n1=576 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16 src2_s0=1
vop op=add dst_space=acc dst_dtype=fp32 src1_space=acc src1_dtype=fp32 src2_space=l1 src2_addr=24640 src2_dtype=fp32 n0=16 n1=576 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16 src2_s0=1
vop op=relu dst_space=acc dst_dtype=fp32 src1_space=acc src1_dtype=fp32 n0=16 n1=576 n2=1 dst_s0=1 dst_s1=16 src1_s0=1 src1_s1=16
