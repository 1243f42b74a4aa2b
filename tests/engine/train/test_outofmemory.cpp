// Out-of-memory messages (engine/train/outofmemory.h): the device read from what each libtorch's
// allocator says, and one line that says what to change.

#include "engine/train/outofmemory.h"

#include <gtest/gtest.h>

using engine::train::OutOfMemoryContext;
using engine::train::outOfMemoryDevice;
using engine::train::outOfMemoryMessage;

TEST(OutOfMemory, ReadsTheDeviceFromEachAllocatorsWording)
{
    // libtorch 1.13's CUDA caching allocator, and 2.x's.
    EXPECT_EQ(outOfMemoryDevice("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 1; 14.76 GiB total capacity; "
                                "13.49 GiB already allocated)", "cpu"),
              "cuda:1");
    EXPECT_EQ(outOfMemoryDevice("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 15.77 GiB "
                                "of which 1.12 GiB is free.", "cpu"),
              "cuda:0");
    EXPECT_EQ(outOfMemoryDevice("[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory: "
                                "you tried to allocate 4000000000000 bytes. Error code 12", "cuda:0"),
              "cpu");
    EXPECT_EQ(outOfMemoryDevice("DefaultCPUAllocator: not enough memory: you tried to allocate 8 bytes.", "cuda:0"), "cpu");
    EXPECT_EQ(outOfMemoryDevice("out of host memory (std::bad_alloc)", "cuda:0"), "cpu");
    EXPECT_EQ(outOfMemoryDevice("out of memory", "cuda:3"), "cuda:3") << "no device named: where the run trains";
}

TEST(OutOfMemory, OneLineWithDevicePhaseStepAndOnlyTheChangesThatApply)
{
    OutOfMemoryContext c;
    c.phase = "backward";
    c.step = 12;
    c.defaultDevice = "cpu";
    c.modelPath = "/models/llama";
    c.batchSize = 8;
    c.sequenceLength = 512;
    const std::string full = outOfMemoryMessage("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15 GiB total)\n"
                                                "Exception raised from malloc at ...\nframe #0: ...",
                                                c);
    EXPECT_EQ(full.rfind("out of memory on cuda:0 in backward at step 12 (CUDA out of memory. Tried to allocate 2.00 GiB", 0), 0u)
        << full;
    EXPECT_EQ(full.find('\n'), std::string::npos) << full;
    EXPECT_EQ(full.find("frame #0"), std::string::npos) << "the backtrace is left out";
    for (const char *hint : {"--batch-size (now 8", "--seq-len (now 512)", "--checkpointing", "--method lora",
                             "move layers off cuda:0", "tunebench plan --model /models/llama --train full --batch-size 8 --seq-len 512"})
        EXPECT_NE(full.find(hint), std::string::npos) << hint << " in: " << full;

    c.lora = true;
    c.checkpointing = true;
    c.step = 0;
    c.phase = "loading the model";
    const std::string lora = outOfMemoryMessage("out of host memory (std::bad_alloc)", c);
    EXPECT_EQ(lora.rfind("out of memory on cpu in loading the model (out of host memory", 0), 0u) << lora;
    EXPECT_EQ(lora.find("at step"), std::string::npos) << lora;
    EXPECT_EQ(lora.find("--checkpointing"), std::string::npos) << "already on: " << lora;
    EXPECT_EQ(lora.find("--method lora"), std::string::npos) << "already LoRA: " << lora;
    EXPECT_NE(lora.find("--train lora"), std::string::npos) << lora;
}
