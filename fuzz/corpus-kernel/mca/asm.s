	.file	"dot.c"
	.text
.Ltext0:
	.file 0 "/work/main/examples/kernels/dot" "dot.c"
	.p2align 4
	.type	main._omp_fn.0, @function
main._omp_fn.0:
.LVL0:
.LFB26:
	.file 1 "dot.c"
	.loc 1 24 9 view -0
	.cfi_startproc
	.loc 1 24 9 is_stmt 0 view .LVU1
	pushq	%r13
	.cfi_def_cfa_offset 16
	.cfi_offset 13, -16
	pushq	%r12
	.cfi_def_cfa_offset 24
	.cfi_offset 12, -24
	pushq	%rbp
	.cfi_def_cfa_offset 32
	.cfi_offset 6, -32
	pushq	%rbx
	.cfi_def_cfa_offset 40
	.cfi_offset 3, -40
	movq	%rdi, %rbx
	subq	$24, %rsp
	.cfi_def_cfa_offset 64
	.loc 1 24 9 view .LVU2
	movq	8(%rdi), %rbp
.LVL1:
	.loc 1 24 9 view .LVU3
	movq	(%rdi), %r13
.LVL2:
.LBB12:
	.loc 1 26 7 is_stmt 1 view .LVU4
.LBB13:
.LBB14:
	.loc 1 28 12 view .LVU5
	call	omp_get_num_threads@PLT
.LVL3:
	.loc 1 28 12 is_stmt 0 view .LVU6
	movslq	%eax, %r12
	call	omp_get_thread_num@PLT
.LVL4:
	movslq	%eax, %rcx
	movl	$4000000, %eax
	cqto
	idivq	%r12
	cmpq	%rdx, %rcx
	jl	.L2
.L6:
	imulq	%rax, %rcx
.LBE14:
.LBE13:
	.loc 1 26 14 view .LVU7
	pxor	%xmm1, %xmm1
	addq	%rcx, %rdx
	addq	%rdx, %rax
	cmpq	%rax, %rdx
	jl	.L4
.LVL5:
.L3:
	.loc 1 26 14 view .LVU8
	movsd	%xmm1, 8(%rsp)
.LVL6:
	.loc 1 26 14 view .LVU9
	call	GOMP_barrier@PLT
.LVL7:
	.loc 1 31 7 is_stmt 1 discriminator 1 view .LVU10
.LBB17:
	.loc 1 31 12 discriminator 1 view .LVU11
	.loc 1 31 25 discriminator 1 view .LVU12
	.loc 1 32 9 discriminator 1 view .LVU13
	.loc 1 32 15 is_stmt 0 discriminator 1 view .LVU14
	movsd	8(%rsp), %xmm1
	pxor	%xmm0, %xmm0
	movq	16(%rbx), %rdx
.LBE17:
.LBE12:
	.loc 1 24 31 discriminator 1 view .LVU15
	leaq	16(%rbx), %rcx
.LBB20:
.LBB18:
	.loc 1 32 15 discriminator 1 view .LVU16
	addsd	%xmm0, %xmm1
.LVL8:
	.loc 1 31 32 is_stmt 1 discriminator 1 view .LVU17
	.loc 1 31 25 discriminator 1 view .LVU18
.L5:
	.loc 1 31 25 is_stmt 0 discriminator 1 view .LVU19
.LBE18:
.LBE20:
	.loc 1 24 31 discriminator 1 view .LVU20
	movq	%rdx, %xmm2
	movq	%rdx, %rax
	addsd	%xmm1, %xmm2
	movq	%xmm2, %rsi
	lock cmpxchgq	%rsi, (%rcx)
	jne	.L13
	.loc 1 24 9 view .LVU21
	addq	$24, %rsp
	.cfi_remember_state
	.cfi_def_cfa_offset 40
	popq	%rbx
	.cfi_def_cfa_offset 32
.LVL9:
	.loc 1 24 9 view .LVU22
	popq	%rbp
	.cfi_def_cfa_offset 24
.LVL10:
	.loc 1 24 9 view .LVU23
	popq	%r12
	.cfi_def_cfa_offset 16
	popq	%r13
	.cfi_def_cfa_offset 8
.LVL11:
	.loc 1 24 9 view .LVU24
	ret
.LVL12:
	.p2align 4,,10
	.p2align 3
.L4:
	.cfi_restore_state
.LBB21:
.LBB19:
.LBB16:
	.loc 1 29 9 is_stmt 1 view .LVU25
.LBB15:
	.loc 1 29 14 view .LVU26
	.loc 1 29 27 view .LVU27
	.loc 1 30 11 view .LVU28
	.loc 1 30 30 is_stmt 0 view .LVU29
	movsd	0(%r13,%rdx,8), %xmm0
	mulsd	0(%rbp,%rdx,8), %xmm0
	addq	$1, %rdx
.LVL13:
	.loc 1 30 18 view .LVU30
	addsd	%xmm0, %xmm1
.LVL14:
	.loc 1 29 34 is_stmt 1 view .LVU31
	.loc 1 29 27 view .LVU32
	.loc 1 29 27 is_stmt 0 view .LVU33
	cmpq	%rdx, %rax
	jne	.L4
	jmp	.L3
.LVL15:
	.p2align 4,,10
	.p2align 3
.L2:
	.loc 1 29 27 view .LVU34
	addq	$1, %rax
.LBE15:
.LBE16:
.LBE19:
.LBE21:
	.loc 1 24 9 view .LVU35
	xorl	%edx, %edx
	jmp	.L6
.LVL16:
.L13:
	.loc 1 24 9 view .LVU36
	movq	%rax, %rdx
	jmp	.L5
	.cfi_endproc
.LFE26:
	.size	main._omp_fn.0, .-main._omp_fn.0
	.section	.rodata.str1.1,"aMS",@progbits,1
.LC4:
	.string	"%.12e\n"
	.section	.text.startup,"ax",@progbits
	.p2align 4
	.globl	main
	.type	main, @function
main:
.LVL17:
.LFB25:
	.loc 1 16 33 is_stmt 1 view -0
	.cfi_startproc
	.loc 1 17 3 view .LVU38
.LBB33:
.LBI33:
	.file 2 "../common.h"
	.loc 2 10 20 view .LVU39
.LBB34:
	.loc 2 11 3 view .LVU40
.LBE34:
.LBE33:
	.loc 1 16 33 is_stmt 0 view .LVU41
	pushq	%r15
	.cfi_def_cfa_offset 16
	.cfi_offset 15, -16
	pushq	%r14
	.cfi_def_cfa_offset 24
	.cfi_offset 14, -24
	pushq	%r13
	.cfi_def_cfa_offset 32
	.cfi_offset 13, -32
	pushq	%r12
	.cfi_def_cfa_offset 40
	.cfi_offset 12, -40
	pushq	%rbp
	.cfi_def_cfa_offset 48
	.cfi_offset 6, -48
	pushq	%rbx
	.cfi_def_cfa_offset 56
	.cfi_offset 3, -56
	movl	$1, %ebx
	subq	$360, %rsp
	.cfi_def_cfa_offset 416
.LBB37:
.LBB35:
	.loc 2 11 65 view .LVU42
	cmpl	$1, %edi
	jle	.L15
	.loc 2 11 37 view .LVU43
	movq	8(%rsi