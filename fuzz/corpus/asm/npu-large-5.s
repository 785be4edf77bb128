ld push=feed src_addr=57024 dst_space=l1 dst_addr=448 elem_bytes=2 n0=10 n1=48 n2=1 src_s0=1 src_s1=10 src_s2=480 dst_s0=1 dst_s1=10 dst_s2=480
mov pop=vector src_space=l1 dst_space=l0a elem_bytes=2 n0=48 n1=1 n2=1 src_s0=1 src_s1=48 src_s2=48 dst_s0=1 dst_s1=48 dst_s2=48
mov pop=load push=tensor src_space=l1 src_addr=448 dst_space=l0b elem_bytes=2 n0=10 n1=48 n2=1 src_s0=1 src_s1=10 dst_s0=1 dst_s1=10
mm pop=feed push=vector m=1 k=48 n=10
vop pop=load|tensor push=store op=add dst_space=l1 dst_addr=2368 src1_space=acc src1_dtype=fp32 src2_space=l1 src2_addr=128 src2_dtype=fp32 n0=10 n1=1 n2=1 dst_s0=1 dst_s1=10 src1_s0=1 src1_s1=10 src2_s0=1
st pop=vector src_space=l1 src_addr=2368 dst_addr=6144 elem_bytes=2 n0=10 n1=1 n2=1 src_s0=1 src_s1=10 dst_s0=1 dst_s1=10
