<?php

declare(strict_types=1);

namespace Rlock\Tests\Support;

use Rlock\Symfony\RlockStore;
use Rlock\Symfony\RlockStoreFactory;
use Symfony\Bundle\FrameworkBundle\FrameworkBundle;
use Symfony\Bundle\FrameworkBundle\Kernel\MicroKernelTrait;
use Symfony\Component\DependencyInjection\Loader\Configurator\ContainerConfigurator;
use Symfony\Component\HttpKernel\Kernel;
use Symfony\Component\Lock\LockFactory;

use function Symfony\Component\DependencyInjection\Loader\Configurator\service;

/**
 * A Symfony application with FrameworkBundle whose services are configured as the README says
 * (the store from an rlock:// DSN, LockFactory on it), beside a `framework.lock` of its own.
 */
final class SymfonyKernel extends Kernel
{
    use MicroKernelTrait;

    public function __construct(private readonly string $dsn, private readonly string $cacheDir)
    {
        parent::__construct('test', false);
    }

    public function registerBundles(): iterable
    {
        return [new FrameworkBundle()];
    }

    public function getProjectDir(): string
    {
        return $this->cacheDir;
    }

    public function getCacheDir(): string
    {
        return $this->cacheDir . '/cache';
    }

    public function getLogDir(): string
    {
        return $this->cacheDir . '/log';
    }

    protected function configureContainer(ContainerConfigurator $container): void
    {
        $container->extension('framework', ['secret' => 'test', 'http_method_override' => false, 'lock' => 'semaphore']);
        $services = $container->services();
        $services->set(RlockStore::class)->factory([RlockStoreFactory::class, 'createStore'])->args([$this->dsn]);
        $services->set(LockFactory::class)->args([service(RlockStore::class)])->public();
    }
}
