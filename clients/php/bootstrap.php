<?php

// Loads Debian's PHP packages (php-predis, php-symfony-lock, php-symfony-semaphore,
// php-laravel-framework) and this package's classes without Composer; with Composer,
// vendor/autoload.php does the same from composer.json.

declare(strict_types=1);

foreach ([
    'Predis/autoload.php',
    'Symfony/Component/Lock/autoload.php',
    'Symfony/Component/Semaphore/autoload.php',
    'Illuminate/autoload.php',
    'Symfony/Bundle/FrameworkBundle/autoload.php',
] as $autoload) {
    if (stream_resolve_include_path($autoload) !== false) {
        require_once $autoload;
    }
}

spl_autoload_register(static function (string $class): void {
    foreach (['Rlock\\Tests\\' => __DIR__ . '/tests/', 'Rlock\\' => __DIR__ . '/src/'] as $prefix => $dir) {
        if (str_starts_with($class, $prefix)) {
            $file = $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
            if (is_file($file)) {
                require $file;
            }
            return;
        }
    }
});
