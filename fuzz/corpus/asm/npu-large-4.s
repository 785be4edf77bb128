mov pop=vector push=load|vector src_space=l1 dst_space=l1 dst_addr=8339456 elem_bytes=2 n0=48 n1=16 n2=16 src_s0=1 src_s1=48 src_s2=768 dst_s0=1 dst_s1=48 dst_s2=768 pad_value=64512
vop pop=feed dst_space=acc dst_addr=1024000 dst_dtype=fp32 src1_space=l1 src1_addr=8339456 n0=48 n1=8 n2=8 dst_s0=1 dst_s1=48 dst_s2=384 src1_s0=1 src1_s1=96 src1_s2=1536
vop op=max dst_space=acc dst_addr=1024000 dst_dtype=fp32 src1_space=acc src1_addr=1024000 src1_dtype=fp32 src2_space=l1 src2_addr=8339552 n0=48 n1=8 n2=8 dst_s0=1 dst_s1=48 dst_s2=384 src1_s0=1 src1_s1=48 src1_s2=384 src2_s0=1 src2_s1=96 src2_s2=1536
vop op=max dst_space=acc dst_addr=1024000 dst_dtype=fp32 src1_space=acc src1_addr=1024000 src1_dtype=fp32 src2_space=l1 src2_addr=8340992 n0=48 n1=8 n2=8 dst_s0=1 dst_s1=48 dst_s2=384 src1_s0=1 src1_s1=48 src1_s2=384 src2_s0=1 src2_s1=96 src2_s2=1536
vop op=max dst_space=acc dst_addr=1024000 dst_dtype=fp32 src1_space=acc src1_addr=1024000 src1_dtype=fp32 src2_space=l1 src2_addr=8341088 n0=48 n1=8 n2=8 dst_s0=1 dst_s1=48 dst_s2=384 src1_s0=1 src1_s1=48 src1_s2=384 src2_s0=1 src2_s1=96 src2_s2=1536
vop push=feed dst_space=l1 dst_addr=24576 src1_space=acc src1_addr=1024000 src1_dtype=fp32 n0=48 n1=64 n2=1 dst_s0=1 dst_s1=48 src1_s0=1 src1_s1=48
ld pop=feed push=vector src_addr=56896 dst_space=l1 dst_addr=30720 elem_bytes=2 n0=2 n1=1 n2=1 src_s0=1 src_s1=2 dst_s0=1 dst_s1=2
mov pop=vector push=vector src_space=l1 src_addr=24576 dst_space=l1 dst_addr=30784 elem_bytes=2 n0=48 n1=64 n2=1 src_s0=1 src_s1=48 dst_s0=1 dst_s1=48
vop pop=feed dst_space=acc dst_dtype=fp32 src1_space=l1 src1_addr=30784 n0=48 n1=1 n2=1 dst_s0=1 src1_s0=1 src1_s1=48
vop op=add dst_space=acc dst_dtype=fp32 src1_space=acc src1_dtype=fp32 src2_space=l1 src2_addr=30880 n0=48 n1=63 n2=1 dst_s0=1 src1_s0=1 src2_s0=1 src2_s1=48
vop pop=load push=feed op=mul dst_space=l1 src1_space=acc src1_dtype=fp32 src2_space=l1 src2_addr=30720 src2_dtype=fp32 n0=48 n1=1 n2=1 dst_s0=1 src1_s0=1
ld pop=feed push=vector src_addr=56960 dst_space=l1 dst_addr=128 elem_bytes=2 n0=20 n1=1 n2=1 src_s0=1 src_s1=20 dst_s0=1 dst_s1=20
