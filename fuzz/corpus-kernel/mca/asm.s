	.file 1 "k.c"
.L3:
	.loc 1 3 5
	vmovupd (%rdi,%rax), %ymm0
	vfmadd231pd (%rsi,%rax), %ymm0, %ymm1
	addq $32, %rax
	cmpq %rax, %rdx
	jne .L3
	ret
