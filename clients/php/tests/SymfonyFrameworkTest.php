<?php

declare(strict_types=1);

namespace Rlock\Tests;

use Rlock\Symfony\RlockStore;
use Rlock\Tests\Support\ServerTestCase;
use Rlock\Tests\Support\SymfonyKernel;
use Symfony\Component\Lock\LockFactory;

/** The README's services configuration in a FrameworkBundle application: LockFactory is ours. */
final class SymfonyFrameworkTest extends ServerTestCase
{
    public function testTheLockFactoryOfTheApplicationUsesTheRlockStore(): void
    {
        $dir = sys_get_temp_dir() . '/rlock-php-kernel-' . bin2hex(random_bytes(6));
        $kernel = new SymfonyKernel('rlock://127.0.0.1:' . static::$server->port, $dir);
        try {
            $kernel->boot();
            $factory = $kernel->getContainer()->get(LockFactory::class);
            $store = (new \ReflectionProperty(LockFactory::class, 'store'))->getValue($factory);
            $this->assertInstanceOf(RlockStore::class, $store);
            $lock = $factory->createLock('from-the-container');
            $this->assertTrue($lock->acquire(true));
            $this->assertNotFalse(static::$server->admin('RWLOCK.INFO', 'from-the-container'));
            $lock->release();
        } finally {
            $kernel->shutdown();
            exec('rm -rf ' . escapeshellarg($dir));
        }
    }
}
