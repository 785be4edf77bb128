mov pop=load push=tensor src_space=l1 src_addr=8310144 dst_space=l0b dst_addr=487424 elem_bytes=2 n0=32 n1=288 n2=1 src_s0=1 src_s1=32 dst_s0=1 dst_s1=32
mm pop=feed push=vector a_addr=229376 b_addr=487424 c_addr=983040 m=256 k=288 n=32
vop pop=load|tensor op=add dst_space=acc dst_addr=983040 dst_dtype=fp32 src1_space=acc src1_addr=983040 src1_dtype=fp32 src2_space=l1 src2_addr=8388480 src2_dtype=fp32 n0=32 n1=256 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=32 src2_s0=1
vop op=add dst_space=acc dst_addr=983040 dst_dtype=fp32 src1_space=acc src1_addr=983040 src1_dtype=fp32 src2_space=l1 n0=32 n1=256 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=32 src2_s0=1 src2_s1=32
vop push=feed op=relu dst_space=l1 dst_addr=32768 src1_space=acc src1_addr=983040 src1_dtype=fp32 n0=32 n1=256 n2=1 dst_s0=1 dst_s1=32 src1_s0=1 src1_s1=32
ld pop=feed push=vector src_addr=53632 dst_space=l1 dst_addr=49152 elem_bytes=2 n0=96 n1=1 n2=1 src_s0=1 src_s1=96 dst_s0=1 dst_s1=96
ld pop=feed push=feed src_addr=53824 dst_space=l1 dst_addr=82112 elem_bytes=2 n0=48 n1=32 n2=1 src_s0=1 src_s1=48 src_s2=1536 dst_s0=1 dst_s1=48 dst_s2=1536
mov pop=vector src_space=l1 src_addr=32768 dst_space=l0a elem_bytes=2 n0=32 n1=16 n2=16 src_s0=1 src_s1=32 src_s2=512 dst_s0=1 dst_s1=32 dst_s2=512
mov pop=load push=tensor src_space=l1 src_addr=82112 dst_space=l0b elem_bytes=2 n0=48 n1=32 n2=1 src_s0=1 src_s1=48 dst_s0=1 dst_s1=48
mm pop=feed push=vector m=256 k=32 n=48
vop pop=load|tensor op=add dst_space=acc dst_dtype=fp32 src1_space=acc src1_dtype=fp32 src2_space=l1 src2_addr=49152 src2_dtype=fp32 n0=48 n1=256 n2=1 dst_s0=1 dst_s1=48 src1_s0=1 src1_s1=48 src2_s0=1
vop push=feed op=relu dst_space=l1 src1_space=acc src1_dtype=fp32 n0=48 n1=256 n2=1 dst_s0=1 dst_s1=48 src1_s0=1 src1_s1=48
