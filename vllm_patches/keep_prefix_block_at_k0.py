"""[Core][Spec Decode] Dynamic SD: keep the last prefix-cache block when the batch drafts nothing

With an EAGLE-style drafter, every prefix-cache hit gives back its last block
(`drop_eagle_block`): the drafter's KV at the hit's last position was written with the
token that followed it in an earlier request, so the block is prefilled again to write it
afresh. With dynamic speculative decoding (`num_speculative_tokens_per_batch_size`), a
request admitted while the schedule maps the batch to K=0 has its prefill run with no
drafter pass at all (the proposer returns before any drafter work at K=0), so the block
it gives back is prefilled again for nothing: a whole block of target prefill per hit,
exactly at the load where the schedule turned drafting off to save compute.

Measured on vLLM's CPU build (P-EAGLE, a schedule at K=0 for every batch size the load
reaches, against the same target without a drafter, HumanEval chat prompts x 64 tokens,
repeated): the prefix-cache hit rate was 40-51% against 63% without a drafter; with the
drop switched off (`disable_eagle_block_drop`) it was 63.2%, and output tokens/s at 64
clients 1.22x. That switch applies at every K, though, where the drop protects acceptance.

Fix: the scheduler asks for the drop only when the batch a request joins drafts: at
admission it looks up K for the running and waiting requests (this one among them), the
batch it will decode in, in the dynamic SD lookup, and passes `drop_eagle_block=False` to
`KVCacheManager.get_computed_blocks()` when that K is 0. The manager passes it on to the
coordinator, whose unitary and hybrid lookups drop the block only if both the group is an
EAGLE group and the caller asked for it.
Without a per-batch-size schedule, with a connector (`get_computed_blocks_for_connector`)
and on the connector's reconcile path, nothing changes. Outputs are unchanged: the target
verifies every draft, and the blocks kept are the target's own cached KV. A request
admitted at K=0 that later drafts finds the drafter KV of its prompt unwritten either way
(no drafter pass ran on it), so keeping the block costs it nothing it had.

Test: tests/vllm_patches/test_vllm_patches.py admits a request whose prompt is cached, through the
real `KVCacheManager` (a full-attention and a full+sliding-window KV cache), with a stand-in
scheduler: at a batch size whose K is 7 the hit is one block short, at K=0 it is whole.
"""

from __future__ import annotations

from vllm_patches import Edit, Patch

ADMISSION = Edit(
    before="""        blocks, num_local, shared_prefix_boundary = (
            self.kv_cache_manager.get_computed_blocks(request)
        )
        return blocks, num_local, shared_prefix_boundary, False
""",
    after="""        blocks, num_local, shared_prefix_boundary = (
            self.kv_cache_manager.get_computed_blocks(
                request, drop_eagle_block=self._admitted_batch_drafts()
            )
        )
        return blocks, num_local, shared_prefix_boundary, False

    def _admitted_batch_drafts(self) -> bool:
        \"\"\"Dynamic SD: whether the batch a request admitted now runs in drafts.

        The batch is the running requests and the waiting ones (this one
        among them). At K=0 the drafter does not run on the request, so the
        EAGLE block drop would only prefill the hit's last block again.
        \"\"\"
        lookup = self.dynamic_sd_lookup
        if lookup is None:
            return True
        batch_size = len(self.running) + len(self.waiting)
        return lookup[max(1, min(batch_size, len(lookup) - 1))] > 0
""",
)

MANAGER_SIGNATURE = Edit(
    before="""    def get_computed_blocks(self, request: Request) -> tuple[KVCacheBlocks, int, int]:
""",
    after="""    def get_computed_blocks(
        self, request: Request, drop_eagle_block: bool = True
    ) -> tuple[KVCacheBlocks, int, int]:
""",
)

MANAGER_LOOKUP = Edit(
    before="""            self.coordinator.find_longest_cache_hit(
                request.block_hashes, max_cache_hit_length
            )
""",
    after="""            self.coordinator.find_longest_cache_hit(
                request.block_hashes, max_cache_hit_length, drop_eagle_block
            )
""",
)

SIGNATURE = """    def find_longest_cache_hit(
        self,
        block_hashes: list[BlockHash],
        max_cache_hit_length: int,
    ) -> tuple[tuple[list[KVCacheBlock], ...], int, int]:
"""
SIGNATURE_AFTER = """    def find_longest_cache_hit(
        self,
        block_hashes: list[BlockHash],
        max_cache_hit_length: int,
        drop_eagle_block: bool = True,
    ) -> tuple[tuple[list[KVCacheBlock], ...], int, int]:
"""


def signature(follows: str) -> Edit:
    """The coordinator's lookup signature, told apart by the line after it."""
    return Edit(before=SIGNATURE + follows, after=SIGNATURE_AFTER + follows)


ABSTRACT = signature(
    '        """Returns the per-group hit blocks, the hit length, and the number of\n'
)
NO_CACHE = signature("        blocks: tuple[list[KVCacheBlock], ...] = tuple(\n")
UNITARY = signature(
    "        hit_blocks, hit_length = self.single_type_managers[0].find_longest_cache_hit(\n"
)
HYBRID = signature(
    '        """Find the longest cache hit using an iterative fixed-point algorithm.\n'
)

UNITARY_DROP = Edit(
    before="""            drop_eagle_block=0 in self.eagle_group_ids,
            alignment_tokens=self.block_size,
""",
    after="""            drop_eagle_block=drop_eagle_block and 0 in self.eagle_group_ids,
            alignment_tokens=self.block_size,
""",
)

HYBRID_DROP = Edit(
    before="""                drop_eagle_block = use_eagle and idx not in eagle_verified
""",
    after="""                drop_group_block = (
                    drop_eagle_block and use_eagle and idx not in eagle_verified
                )
""",
)

# The hybrid loop's own flag is renamed, as the argument now carries the caller's wish.
HYBRID_USES = Edit(
    before="""                if drop_eagle_block and not isinstance(spec, MambaSpec):
                    eagle_margin = eagle_proof_margin(
                        group_block_size,
""",
    after="""                if drop_group_block and not isinstance(spec, MambaSpec):
                    eagle_margin = eagle_proof_margin(
                        group_block_size,
""",
)

HYBRID_PASSES = Edit(
    before="""                    kv_cache_spec=spec,
                    drop_eagle_block=drop_eagle_block,
                    alignment_tokens=self._cache_hit_alignment_tokens,
                    dcp_world_size=self.single_type_managers[
                        first_group_id
                    ].dcp_world_size,
                    pcp_world_size=self.single_type_managers[
                        first_group_id
                    ].pcp_world_size,
                )
                if drop_eagle_block:
                    eagle_verified.add(idx)
""",
    after="""                    kv_cache_spec=spec,
                    drop_eagle_block=drop_group_block,
                    alignment_tokens=self._cache_hit_alignment_tokens,
                    dcp_world_size=self.single_type_managers[
                        first_group_id
                    ].dcp_world_size,
                    pcp_world_size=self.single_type_managers[
                        first_group_id
                    ].pcp_world_size,
                )
                if drop_group_block:
                    eagle_verified.add(idx)
""",
)

PATCHES = (
    Patch(
        name="keep_prefix_block_at_k0 (scheduler)",
        path="v1/core/sched/scheduler.py",
        edits=(ADMISSION,),
    ),
    Patch(
        name="keep_prefix_block_at_k0 (manager)",
        path="v1/core/kv_cache_manager.py",
        edits=(MANAGER_SIGNATURE, MANAGER_LOOKUP),
    ),
    Patch(
        name="keep_prefix_block_at_k0 (coordinator)",
        path="v1/core/kv_cache_coordinator.py",
        edits=(
            ABSTRACT,
            NO_CACHE,
            UNITARY,
            HYBRID,
            UNITARY_DROP,
            HYBRID_DROP,
            HYBRID_USES,
            HYBRID_PASSES,
        ),
    ),
)
